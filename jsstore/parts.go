package jsstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/natsconn"
	"github.com/ccm-fleet/ccm/protocol"
)

// A history record too large for one message of the connection is kept in
// parts (see protocol.Split): parts 2 and up first, each at
// protocol.HistoryPartSubject with a message id of its own, then part 1 at
// the record's subject with the record's headers and the part headers. A
// reader that finds part 1 fetches the others by subject and joins them,
// so a record exists for readers only once its last message, part 1, is
// stored.

// publishParts writes data as a record in parts on subject.
func publishParts(ctx context.Context, js jetstream.JetStream, maxPayload int64, subject, msgID string, header nats.Header, data []byte) (bool, error) {
	id, host, err := protocol.ParseHistorySubject(subject)
	if err != nil {
		return false, fmt.Errorf("history %s: %w", subject, err)
	}
	parts, err := protocol.Split(data, protocol.PartBytes(maxPayload, header))
	if err != nil {
		return false, fmt.Errorf("history %s: %w", subject, err)
	}
	for _, p := range parts[1:] {
		if _, err := publishOne(ctx, js, protocol.HistoryPartSubject(id, host, p.Index), protocol.HistoryPartMsgID(id, host, p.Index), nats.Header(p.Headers()), p.Data); err != nil {
			return false, fmt.Errorf("history %s part %d of %d: %w", subject, p.Index, p.Count, err)
		}
	}
	head := nats.Header{}
	for k, v := range header {
		head[k] = v
	}
	for k, v := range parts[0].Headers() {
		head[k] = v
	}
	return publishOne(ctx, js, subject, msgID, head, parts[0].Data)
}

// publishOne writes one message with its message id to the history stream.
func publishOne(ctx context.Context, js jetstream.JetStream, subject, msgID string, header nats.Header, data []byte) (bool, error) {
	ack, err := js.PublishMsg(ctx, natsconn.NewMsg(subject, "", header, data),
		jetstream.WithMsgID(msgID), jetstream.WithExpectStream(protocol.HistoryStream), jetstream.WithRetryAttempts(0))
	if err != nil {
		return false, historyError(err)
	}
	return ack.Duplicate, nil
}

// partGetter fetches the parts of records kept in parts from the history
// stream, looking the stream up once.
type partGetter struct {
	js     jetstream.JetStream
	stream jetstream.Stream
}

// complete joins the record rec when it is part 1 of a record kept in
// parts; a record sent whole is returned as it is. A record whose parts
// cannot all be read, or do not match, keeps no data and carries the
// reason in Err (wrapping protocol.ErrIncomplete).
func (g *partGetter) complete(ctx context.Context, rec Record) Record {
	info, ok, err := protocol.ParsePartInfo(rec.Header.Get)
	if !ok {
		return rec
	}
	if err == nil && info.Index != 1 {
		err = fmt.Errorf("%w: the record is part %d, not the first", protocol.ErrIncomplete, info.Index)
	}
	var whole []byte
	if err == nil {
		whole, err = g.join(ctx, rec, info)
	}
	if err != nil {
		rec.Data = nil
		rec.Err = fmt.Errorf("history %s: %w", rec.Subject, err)
		return rec
	}
	rec.Data = whole
	return rec
}

// join fetches parts 2 and up of rec and joins them with its data.
func (g *partGetter) join(ctx context.Context, rec Record, info protocol.PartInfo) ([]byte, error) {
	a, err := protocol.NewAssembly(info)
	if err != nil {
		return nil, err
	}
	if _, err := a.Add(info, rec.Data); err != nil {
		return nil, err
	}
	if info.Count > 1 && g.stream == nil {
		if g.stream, err = g.js.Stream(ctx, protocol.HistoryStream); err != nil {
			return nil, historyError(err)
		}
	}
	for n := 2; n <= info.Count; n++ {
		m, err := g.getPart(ctx, protocol.HistoryPartSubject(rec.RequestID, rec.Identity, n))
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			return nil, fmt.Errorf("%w: part %d of %d is not in the stream (%d bytes announced)", protocol.ErrIncomplete, n, info.Count, info.Size)
		case err != nil:
			return nil, historyError(err)
		}
		pi, ok, err := protocol.ParsePartInfo(m.Header.Get)
		switch {
		case err != nil:
			return nil, err
		case !ok || pi.Index != n:
			return nil, fmt.Errorf("%w: the message at part %d's subject is not that part", protocol.ErrIncomplete, n)
		}
		if _, err := a.Add(pi, m.Data); err != nil {
			return nil, err
		}
	}
	return a.Whole()
}

// partAttempts is how many times a part is asked for before its record is
// reported incomplete: a busy server may let one direct get time out.
const partAttempts = 3

// getPart fetches the part on subject, asking again after a failure other
// than its absence, unless ctx ended.
func (g *partGetter) getPart(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	var err error
	for range partAttempts {
		var m *jetstream.RawStreamMsg
		m, err = g.stream.GetLastMsgForSubject(ctx, subject)
		if err == nil || errors.Is(err, jetstream.ErrMsgNotFound) || ctx.Err() != nil {
			return m, err
		}
	}
	return nil, err
}
