package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/protocol"
)

// The feed reads the assignment bucket with JetStream direct gets: any of
// the stream's servers answers one, outside the JetStream API's queue
// that a fleet starting at once fills with stream lookups.

// readAll is every key's last entry and the stream sequence they are
// current up to.
func (f *assignFeed) readAll(ctx context.Context) ([]*feedEntry, uint64, error) {
	msgs, err := f.direct(ctx, directRequest{MultiLast: []string{assignmentSubjects}})
	if err != nil {
		return nil, 0, err
	}
	var upTo uint64
	entries := make([]*feedEntry, 0, len(msgs))
	for _, m := range msgs {
		if m.Header.Get("Status") == "204" { // the end of the batch
			if n := m.Header.Get("Nats-Num-Pending"); n != "" && n != "0" {
				return nil, 0, fmt.Errorf("assignment store: %s entries were not sent in one read", n)
			}
			upTo, _ = strconv.ParseUint(m.Header.Get("Nats-UpTo-Sequence"), 10, 64)
			continue
		}
		e, ok := stored(m)
		if !ok {
			return nil, 0, fmt.Errorf("assignment store: a read returned a message of %q", m.Header.Get(jetstream.SubjectHeader))
		}
		entries = append(entries, e)
		upTo = max(upTo, e.rev)
	}
	return entries, upTo, nil
}

// directRequest is a JetStream direct get: the last message of one subject
// (LastBySubject, wildcards allowed), or of each subject matching
// MultiLast (nats-server 2.11 and later).
type directRequest struct {
	LastBySubject string   `json:"last_by_subj,omitempty"`
	MultiLast     []string `json:"multi_last,omitempty"`
}

// maxDirectMessages bounds one direct get's answer (the server sends at
// most 1,024 messages and an end marker).
const maxDirectMessages = 1025

// direct sends a direct get to the assignment stream and collects its
// answer: one message, or a batch up to its end marker (status 204). No
// results (404) is an empty answer; any other status is an error.
func (f *assignFeed) direct(ctx context.Context, req directRequest) ([]*nats.Msg, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	batch := len(req.MultiLast) > 0
	// The channel holds a whole answer: a message that finds it full is
	// dropped. (A sync subscription's channel has 65,536 slots, 512 KiB
	// allocated and cleared per read: 5.9% of 20,000 agents' CPU.)
	size := 2
	if batch {
		size = maxDirectMessages + 1
	}
	ch := make(chan *nats.Msg, size)
	inbox := f.nc.NewInbox()
	sub, err := f.nc.ChanSubscribe(inbox, ch)
	if err != nil {
		return nil, fmt.Errorf("assignment store: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := f.nc.PublishRequest("$JS.API.DIRECT.GET.KV_"+protocol.AssignmentsBucket, inbox, body); err != nil {
		return nil, fmt.Errorf("assignment store: %w", err)
	}
	var out []*nats.Msg
	for len(out) < maxDirectMessages {
		var m *nats.Msg
		select {
		case m = <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("assignment store: %w", ctx.Err())
		}
		switch status := m.Header.Get("Status"); status {
		case "":
			out = append(out, m)
			if !batch {
				return out, nil
			}
		case "204":
			return append(out, m), nil
		case "404":
			return out, nil
		case "503":
			return nil, fmt.Errorf("assignment store: %w", nats.ErrNoResponders)
		default:
			return nil, fmt.Errorf("assignment store: direct get answered %s %s", status, m.Header.Get("Description"))
		}
	}
	return nil, fmt.Errorf("assignment store: a read returned more than %d messages", maxDirectMessages-1)
}

// stored reads a message of the bucket's stream as an entry, from the
// headers a republish and a direct get both carry: the stream, the stored
// subject (the key), the sequence (the revision) and the time; false when
// one is missing or names another stream or bucket.
func stored(m *nats.Msg) (*feedEntry, bool) {
	if m.Header.Get(jetstream.StreamHeader) != "KV_"+protocol.AssignmentsBucket {
		return nil, false
	}
	key, ok := strings.CutPrefix(m.Header.Get(jetstream.SubjectHeader), "$KV."+protocol.AssignmentsBucket+".")
	if !ok || key == "" {
		return nil, false
	}
	seq, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
	if err != nil || seq == 0 {
		return nil, false
	}
	ts, _ := time.Parse(time.RFC3339Nano, m.Header.Get(jetstream.TimeStampHeaer))
	return entryOf(key, seq, ts, m.Header, m.Data), true
}

// entryOf is one stored message of the bucket as a KV entry.
func entryOf(key string, seq uint64, ts time.Time, h nats.Header, data []byte) *feedEntry {
	op := jetstream.KeyValuePut
	switch h.Get("KV-Operation") {
	case "DEL":
		op = jetstream.KeyValueDelete
	case "PURGE":
		op = jetstream.KeyValuePurge
	}
	return &feedEntry{key: key, rev: seq, created: ts, op: op, value: data}
}

// feedEntry is a jetstream.KeyValueEntry read by the feed.
type feedEntry struct {
	key     string
	rev     uint64
	created time.Time
	op      jetstream.KeyValueOp
	value   []byte
}

func (e *feedEntry) Bucket() string                  { return protocol.AssignmentsBucket }
func (e *feedEntry) Key() string                     { return e.key }
func (e *feedEntry) Value() []byte                   { return e.value }
func (e *feedEntry) Revision() uint64                { return e.rev }
func (e *feedEntry) Created() time.Time              { return e.created }
func (e *feedEntry) Delta() uint64                   { return 0 }
func (e *feedEntry) Operation() jetstream.KeyValueOp { return e.op }
