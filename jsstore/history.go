package jsstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/protocol"
)

// EnsureHistory creates the history stream, or updates it to c when it
// exists, and returns its information. With no c.Sources an existing
// stream keeps the sources it has.
func EnsureHistory(ctx context.Context, js jetstream.JetStream, c HistoryConfig) (*jetstream.StreamInfo, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	cfg := c.StreamConfig()
	cfg.MaxConsumers = FleetMaxConsumers
	if len(c.Sources) == 0 {
		// A hub's sources are kept by a provisioning that names none
		// (history init run against the hub).
		if s, err := js.Stream(ctx, protocol.HistoryStream); err == nil {
			cfg.Sources = s.CachedInfo().Config.Sources
		}
	}
	s, err := js.CreateOrUpdateStream(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("history stream %s: %w", protocol.HistoryStream, err)
	}
	return s.CachedInfo(), nil
}

// Publish writes one history record with its message id (see
// protocol.HistoryMsgID) to the history stream. duplicate is true when the
// stream already had a record with that id: it was recorded before, which is
// success. A failure is not retried: with no JetStream answering it comes
// back at once.
//
// A record too large for one message of the connection (its max payload)
// is written in parts (see parts.go), up to protocol.MaxWholeBytes; the
// readers below join them.
func Publish(ctx context.Context, js jetstream.JetStream, subject, msgID string, header nats.Header, data []byte) (duplicate bool, err error) {
	if maxPayload := js.Conn().MaxPayload(); maxPayload > 0 && !protocol.FitsOneMessage(maxPayload, header, data) {
		return publishParts(ctx, js, maxPayload, subject, msgID, header, data)
	}
	return publishOne(ctx, js, subject, msgID, header, data)
}

// Recorded reports whether the history stream s already holds a record on
// subject (each subject holds one record: one host's reply to one request).
func Recorded(ctx context.Context, s jetstream.Stream, subject string) (bool, error) {
	_, err := s.GetLastMsgForSubject(ctx, subject)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return false, nil
	default:
		return false, fmt.Errorf("history %s: %w", subject, err)
	}
}

// Record is one message of the history stream.
type Record struct {
	// RequestID and Identity come from the subject; Identity is empty for
	// the request's own record.
	RequestID string
	Identity  string
	Subject   string
	Header    nats.Header
	Data      []byte
	// Time is when the server stored the record.
	Time time.Time
	// Seq is the record's stream sequence.
	Seq uint64
	// Err, for a record kept in parts, says why its parts could not be
	// joined (it wraps protocol.ErrIncomplete); Data is then nil. A
	// record is never dropped for it: its reader reports it.
	Err error
}

// readBatch is how many records a reader asks for at once.
const readBatch = 1000

// ReadOptions select the records Read delivers.
type ReadOptions struct {
	// Filter is a subject filter within ccm.v1.history.>.
	Filter string
	// Since, when set, skips records stored before it.
	Since time.Time
	// HeadersOnly delivers records without their data.
	HeadersOnly bool
	// StartSeq, when set, skips records before this stream sequence (a
	// reader that polls passes one past the last record it saw). Set
	// Since or StartSeq, not both: StartSeq wins.
	StartSeq uint64
	// Consistent makes the read deliver at least every record the
	// stream's leader held on Filter when the read began, even when the
	// replica serving it lags (see caughtup.go). It costs one count of
	// Filter's subjects at the leader: set it for a bounded filter (one
	// run's), with neither Since nor StartSeq.
	Consistent bool
}

// Read calls fn with every record opts select, in stream order, until it
// has seen every record stored when it started. Records whose subject does
// not parse are skipped, and so are the parts (2 and up) of records kept
// in parts: a record's first part is delivered with every part joined
// (unless HeadersOnly), or with Err set. An error of fn stops the read and
// is returned. A missing stream is ErrNoHistory.
func Read(ctx context.Context, js jetstream.JetStream, opts ReadOptions, fn func(Record) error) error {
	parts := &partGetter{js: js}
	since := opts.Since
	cfg := jetstream.ConsumerConfig{
		FilterSubject:     opts.Filter,
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		AckPolicy:         jetstream.AckNonePolicy,
		MemoryStorage:     true,
		Replicas:          1,
		InactiveThreshold: time.Minute,
		HeadersOnly:       opts.HeadersOnly,
	}
	if !since.IsZero() {
		cfg.DeliverPolicy = jetstream.DeliverByStartTimePolicy
		cfg.OptStartTime = &since
	}
	if opts.StartSeq > 0 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = opts.StartSeq
		cfg.OptStartTime = nil
	}
	var (
		want uint64
		err  error
	)
	if opts.Consistent {
		if !since.IsZero() || opts.StartSeq > 0 {
			return errors.New("history read: a consistent read counts every record on its filter, so it takes neither Since nor StartSeq")
		}
		// Counted before the consumer exists: every record the leader
		// holds now is one the read must deliver.
		if want, err = leaderCount(ctx, js, opts.Filter); err != nil {
			return historyError(err)
		}
	}
	cons, err := js.CreateConsumer(ctx, protocol.HistoryStream, cfg)
	if err != nil {
		return historyError(err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = js.DeleteConsumer(dctx, protocol.HistoryStream, cons.CachedInfo().Name)
	}()
	made := time.Now()
	pending := cons.CachedInfo().NumPending
	var delivered uint64
	for pending > 0 || delivered < want {
		if pending == 0 {
			// The consumer's replica has not yet stored records its
			// leader counted.
			if pending, err = awaitPending(ctx, cons, delivered, want); err != nil {
				return historyError(err)
			}
		}
		batch, err := cons.FetchNoWait(readBatch)
		if err != nil {
			return historyError(err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			delivered++
			meta, err := m.Metadata()
			if err != nil {
				continue
			}
			pending = meta.NumPending
			if protocol.IsHistoryPartSubject(m.Subject()) {
				continue
			}
			id, host, err := protocol.ParseHistorySubject(m.Subject())
			if err != nil {
				continue
			}
			rec := Record{RequestID: id, Identity: host, Subject: m.Subject(), Header: m.Headers(), Data: m.Data(), Time: meta.Timestamp, Seq: meta.Sequence.Stream}
			if !opts.HeadersOnly {
				rec = parts.complete(ctx, rec)
			}
			if err := fn(rec); err != nil {
				return err
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			// A consumer just made on another server of a cluster takes
			// pull requests once its interest crossed the route: until
			// then a fetch has no responders. Ask again, for a while.
			if !errors.Is(err, nats.ErrNoResponders) || time.Since(made) > consistentWait {
				return historyError(err)
			}
		}
		if got == 0 {
			// Nothing ready yet although some is pending: wait briefly
			// for it rather than spin.
			if err := waitPending(ctx, cons, &pending); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitPending fetches one record with a short wait, for the rare case a
// no-wait fetch came back empty while records were pending.
func waitPending(ctx context.Context, cons jetstream.Consumer, pending *uint64) error {
	info, err := cons.Info(ctx)
	if err != nil {
		return historyError(err)
	}
	*pending = info.NumPending
	if *pending > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// Get returns the record on subject (a request's or one host's), or
// jetstream.ErrMsgNotFound. A record kept in parts is joined (or carries
// Err).
func Get(ctx context.Context, js jetstream.JetStream, subject string) (Record, error) {
	s, err := js.Stream(ctx, protocol.HistoryStream)
	if err != nil {
		return Record{}, historyError(err)
	}
	m, err := s.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return Record{}, err
		}
		return Record{}, historyError(err)
	}
	id, host, err := protocol.ParseHistorySubject(m.Subject)
	if err != nil {
		return Record{}, err
	}
	if protocol.IsHistoryPartSubject(m.Subject) {
		return Record{}, fmt.Errorf("history %s: %w: a part, not a record", m.Subject, protocol.ErrIncomplete)
	}
	rec := Record{RequestID: id, Identity: host, Subject: m.Subject, Header: m.Header, Data: m.Data, Time: m.Time, Seq: m.Sequence}
	return (&partGetter{js: js, stream: s}).complete(ctx, rec), nil
}

// historyError names a missing stream (or no JetStream answering for it)
// as ErrNoHistory.
func historyError(err error) error {
	if errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) {
		return fmt.Errorf("%w %s (create it with `ccm-orch history init`): %w", ErrNoHistory, protocol.HistoryStream, err)
	}
	return fmt.Errorf("history %s: %w", protocol.HistoryStream, err)
}

// Follow delivers every record of the history stream to fn, oldest first,
// then each new one as it is stored, until ctx ends (nil) or fn fails. It
// uses an ordered consumer, which the client recreates on its own after a
// lost connection or a missed message, resuming after the last record
// delivered. Records whose subject is not a history subject are skipped;
// a record kept in parts is delivered joined (or with Err set) when its
// first part comes, its other parts skipped.
func Follow(ctx context.Context, js jetstream.JetStream, fn func(Record) error) error {
	parts := &partGetter{js: js}
	cons, err := js.OrderedConsumer(ctx, protocol.HistoryStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{protocol.HistorySubjects},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return historyError(err)
	}
	msgs, err := cons.Messages()
	if err != nil {
		return historyError(err)
	}
	stop := context.AfterFunc(ctx, msgs.Stop)
	defer stop()
	defer msgs.Stop()
	for {
		m, err := msgs.Next()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return nil
			}
			return historyError(err)
		}
		meta, err := m.Metadata()
		if err != nil {
			continue
		}
		if protocol.IsHistoryPartSubject(m.Subject()) {
			continue
		}
		id, host, err := protocol.ParseHistorySubject(m.Subject())
		if err != nil {
			continue
		}
		rec := parts.complete(ctx, Record{RequestID: id, Identity: host, Subject: m.Subject(), Header: m.Headers(), Data: m.Data(), Time: meta.Timestamp, Seq: meta.Sequence.Stream})
		if err := fn(rec); err != nil {
			return err
		}
	}
}
