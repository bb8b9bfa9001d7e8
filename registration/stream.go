package registration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/protocol"
)

// Stream defaults, as CCM names them.
const (
	// DefaultStream is the registration stream's name.
	DefaultStream = "REGISTRATION"
	// SubjectPrefix starts every entry's subject.
	SubjectPrefix = "choria.ccm.registration.v1"
	// DefaultMaxAge is how long an entry (and the marker of an expired
	// one) is kept at most.
	DefaultMaxAge = 5 * time.Minute
	// MaxEntries bounds the entries one query returns.
	MaxEntries = 100000
)

// headerMarkerReason is set by the server on the marker it leaves when a
// message's TTL expires.
const headerMarkerReason = "Nats-Marker-Reason"

// StreamConfig is the registration stream: one message per entry subject,
// per-message TTLs allowed, markers for expired entries kept maxAge.
func StreamConfig(name string, replicas int, maxAge time.Duration) jetstream.StreamConfig {
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	return jetstream.StreamConfig{
		Name:                   name,
		Subjects:               []string{SubjectPrefix + ".>"},
		Retention:              jetstream.LimitsPolicy,
		MaxMsgsPerSubject:      1,
		AllowMsgTTL:            true,
		AllowRollup:            true,
		Replicas:               max(replicas, 1),
		MaxAge:                 maxAge,
		SubjectDeleteMarkerTTL: maxAge,
		DenyDelete:             true,
		MaxMsgSize:             MaxEntryBytes,
	}
}

// EnsureStream creates or updates the registration stream.
func EnsureStream(ctx context.Context, js jetstream.JetStream, name string, replicas int, maxAge time.Duration) (jetstream.Stream, error) {
	s, err := js.CreateOrUpdateStream(ctx, StreamConfig(name, replicas, maxAge))
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrStream, name, err)
	}
	return s, nil
}

// Publish validates e and stores it, signed with signer, with its TTL as
// the message's Nats-TTL.
func Publish(ctx context.Context, js jetstream.JetStream, e *Entry, signer *protocol.KeySigner) error {
	if err := e.Validate(); err != nil {
		return err
	}
	body, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	msg := nats.NewMsg(e.Subject())
	msg.Data = body
	for k, v := range signer.Header(body) {
		msg.Header[k] = v
	}
	if ttl := e.natsTTL(); ttl != "" {
		msg.Header.Set(jetstream.MsgTTLHeader, ttl)
	}
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("%w: publish %s: %w", ErrStream, e.Subject(), err)
	}
	return nil
}

// Withdraw removes e's endpoint from the stream at once.
func Withdraw(ctx context.Context, js jetstream.JetStream, stream string, e *Entry) error {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return fmt.Errorf("%w %s: %w", ErrStream, stream, err)
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSubject(e.Subject())); err != nil {
		return fmt.Errorf("%w %s: withdraw %s: %w", ErrStream, stream, e.Subject(), err)
	}
	return nil
}

// Record is an entry as kept, with who published it.
type Record struct {
	Entry
	// Signer is the publisher's public key; its signature verified.
	Signer string `json:"signer"`
	// Published is when the entry was last published.
	Published time.Time `json:"published"`
}

// Query returns the entries matching the filter whose signatures verify,
// sorted by cluster, protocol, service, address and port; bad says how
// many entries were skipped (unsigned, bad signature, malformed).
func Query(ctx context.Context, js jetstream.JetStream, stream, cluster, protocolName, service, address string) (recs []Record, bad int, err error) {
	if err := ValidFilter(cluster, protocolName, service, address); err != nil {
		return nil, 0, err
	}
	filter := FilterSubject(cluster, protocolName, service, address)
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}, DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy})
	if err != nil {
		return nil, 0, fmt.Errorf("%w %s: %w", ErrStream, stream, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("%w %s: %w", ErrStream, stream, err)
	}
	// An ordered consumer that resets starts over: keep one record per
	// subject, the last seen.
	seen := map[string]int{}
	if info.NumPending > 0 {
		for {
			msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
			if err != nil {
				return nil, 0, fmt.Errorf("%w %s: %w", ErrStream, stream, err)
			}
			if r, ok := decode(msg.Headers(), msg.Data()); ok {
				if meta, err := msg.Metadata(); err == nil {
					r.Published = meta.Timestamp
				}
				if i, dup := seen[msg.Subject()]; dup {
					recs[i] = r
				} else {
					seen[msg.Subject()] = len(recs)
					recs = append(recs, r)
				}
			} else if msg.Headers().Get(headerMarkerReason) == "" {
				bad++
			}
			meta, err := msg.Metadata()
			if err != nil || meta.NumPending == 0 || len(recs) >= MaxEntries {
				break
			}
		}
	}
	sort.Slice(recs, func(i, j int) bool {
		a, b := recs[i], recs[j]
		for _, p := range [][2]string{{a.Cluster, b.Cluster}, {a.Protocol, b.Protocol}, {a.Service, b.Service}, {a.Address, b.Address}} {
			if p[0] != p[1] {
				return p[0] < p[1]
			}
		}
		return a.Port < b.Port
	})
	return recs, bad, nil
}

// decode verifies and decodes one stored entry.
func decode(h nats.Header, body []byte) (Record, bool) {
	if len(body) == 0 || len(body) > MaxEntryBytes || h == nil {
		return Record{}, false
	}
	if err := protocol.Verify(body, h.Get(protocol.HeaderSigner), h.Get(protocol.HeaderSignature)); err != nil {
		return Record{}, false
	}
	var r Record
	if _, err := protocol.DecodeStrict(body, &r.Entry, protocol.Limits{MaxBytes: MaxEntryBytes}); err != nil {
		return Record{}, false
	}
	if r.Validate() != nil {
		return Record{}, false
	}
	r.Signer = h.Get(protocol.HeaderSigner)
	return r, true
}

// Event is one change a watch saw: an entry published, or removed (by TTL
// expiry, deletion or purge) with the reason.
type Event struct {
	Subject string  `json:"subject"`
	Record  *Record `json:"entry,omitempty"`
	// Removed is the reason an entry went away, "" for a publication.
	Removed string `json:"removed,omitempty"`
}

// Watch calls fn with every change to entries matching the filter from
// now on, until ctx ends or fn returns an error.
func Watch(ctx context.Context, js jetstream.JetStream, stream, cluster, protocolName, service, address string, fn func(Event) error) error {
	if err := ValidFilter(cluster, protocolName, service, address); err != nil {
		return err
	}
	filter := FilterSubject(cluster, protocolName, service, address)
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}, DeliverPolicy: jetstream.DeliverNewPolicy})
	if err != nil {
		return fmt.Errorf("%w %s: %w", ErrStream, stream, err)
	}
	for {
		msg, err := cons.Next(jetstream.FetchMaxWait(time.Second))
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%w %s: %w", ErrStream, stream, err)
		}
		ev := Event{Subject: msg.Subject()}
		if reason := msg.Headers().Get(headerMarkerReason); reason != "" {
			ev.Removed = reason
		} else if r, ok := decode(msg.Headers(), msg.Data()); ok {
			if meta, err := msg.Metadata(); err == nil {
				r.Published = meta.Timestamp
			}
			ev.Record = &r
		} else {
			continue
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
}
