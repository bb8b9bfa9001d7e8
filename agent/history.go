package agent

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// history keeps the agent's replies: it hands each record to the history
// stream, or to the spool while JetStream is away, and sends the spool
// when JetStream is back. One goroutine (run) writes; add never waits.
type history struct {
	identity, publicKey string
	js                  jetstream.JetStream
	log                 *slog.Logger
	now                 func() time.Time
	// retry is how often an absent stream or the spool is tried again,
	// timeout how long one write may take
	retry, timeout time.Duration
	spool          *spool
	stats          *Stats

	// guards records and closed: records are handed to run until close
	// (by pointer: the channel's buffer, allocated whole, holds 8 bytes a
	// slot instead of a record's 64)
	mu      sync.Mutex
	records chan *record
	closed  bool
}

// newHistory returns the history of the agent of cfg, signing as
// publicKey, its records counted in stats.
func newHistory(cfg Config, js jetstream.JetStream, publicKey string, stats *Stats, log *slog.Logger, now func() time.Time) *history {
	return &history{
		identity:  cfg.Identity,
		publicKey: publicKey,
		js:        js,
		log:       log,
		now:       now,
		retry:     cfg.HistoryRetry,
		timeout:   cfg.HistoryTimeout,
		spool:     newSpool(spoolDir(cfg.StateDir), cfg.SpoolMaxRecords, cfg.SpoolMaxBytes),
		stats:     stats,
		records:   make(chan *record, cfg.QueueLength+cfg.MaxConcurrent),
	}
}

// record is one reply on its way to the history stream.
type record struct {
	subject, msgID string
	header         nats.Header
	data           []byte
}

// newRecord builds the history record of reply (encoded as data, signed
// with sig: the record keeps the signature headers), received
// at received and sent now.
func (h *history) newRecord(reply *protocol.FleetReply, data []byte, sig string, received time.Time) record {
	hdr := nats.Header{}
	hdr.Set(protocol.HeaderReceived, protocol.FormatHeaderTime(received))
	hdr.Set(protocol.HeaderReplied, protocol.FormatHeaderTime(h.now()))
	hdr.Set(protocol.HeaderSigner, h.publicKey)
	hdr.Set(protocol.HeaderSignature, sig)
	return record{
		subject: protocol.HistorySubject(reply.RequestID, h.identity),
		msgID:   protocol.HistoryMsgID(reply.RequestID, h.identity),
		header:  hdr,
		data:    data,
	}
}

// add hands a record to run; when its queue is full the
// record goes to the spool at once, so a caller never waits on JetStream.
func (h *history) add(r record) {
	h.mu.Lock()
	if !h.closed {
		select {
		case h.records <- &r:
			h.mu.Unlock()
			return
		default:
		}
	}
	h.mu.Unlock()
	h.keep(r)
}

// close stops run taking records; later ones are spooled.
func (h *history) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.records)
	}
}

// History states of the historian.
const (
	// historyOK: records are written as they come.
	historyOK = iota
	// historyDown: JetStream did not answer; records go to the spool and
	// the spool is retried every HistoryRetry.
	historyDown
	// historyAbsent: JetStream answered that the history stream does not
	// exist (history is not set up); records are not kept, and the stream
	// is looked for again every HistoryRetry.
	historyAbsent
)

// run writes records to the history stream one at a time. A write whose
// answer is late is tried once more with twice the time (the same message
// id: a copy of a write that landed is a duplicate). When a write fails
// it asks JetStream about the stream: no stream means history
// is not set up and records are dropped (logged once); no answer means
// JetStream is unavailable and records go to the spool without trying,
// until a retry every HistoryRetry finds JetStream back and sends the spool.
// It returns when records is closed and drained, after one last try of the
// spool.
//
// The retry ticker is selected on only while there is something to retry:
// a channel timer nobody waits on is not run, so a host whose history is
// kept is not woken every HistoryRetry for nothing.
func (h *history) run(ctx context.Context) {
	ticker := time.NewTicker(h.retry)
	defer ticker.Stop()
	state := historyOK
	if h.spool.stats().Records > 0 {
		state = historyDown
	}
	retry := func() <-chan time.Time {
		if state == historyOK {
			return nil
		}
		return ticker.C
	}
	for {
		select {
		case r, ok := <-h.records:
			if !ok {
				if state == historyOK && h.spool.stats().Records > 0 {
					h.flush(ctx)
				}
				return
			}
			was := state
			if state = h.write(ctx, *r, state); was == historyOK && state != historyOK {
				// The first retry is a whole HistoryRetry after this
				// failure, not at a tick left from before it.
				ticker.Reset(h.retry)
			}
		case <-retry():
			switch state {
			case historyAbsent:
				if h.state(ctx, nil) == historyOK {
					h.log.Info("the history stream exists now, recording replies")
					state = historyOK
				}
			case historyDown:
				if h.flush(ctx) {
					state = historyOK
				}
			}
		}
	}
}

// write handles one record in state and returns the state after it: the
// record written, spooled or (no history stream, or too large) not kept.
func (h *history) write(ctx context.Context, r record, state int) int {
	switch state {
	case historyDown:
		h.keep(r)
		return state
	case historyAbsent:
		h.stats.notRecorded.Add(1)
		return state
	}
	err := h.publish(ctx, r, 1)
	if lateAck(ctx, err) {
		// JetStream answered nothing within the timeout: under a burst of
		// records from many hosts the write has usually landed and only
		// its ack was late. The same record again costs one publish (its
		// message id makes a copy that landed a duplicate), where the
		// spool costs a file now and a lookup and a publish later, which
		// add to the load that made the ack late.
		err = h.publish(ctx, r, 2)
	}
	switch {
	case err == nil:
		if h.spool.stats().Records > 0 && !h.flush(ctx) {
			return historyDown
		}
		return state
	case errorsIsPayload(err):
		h.stats.notRecorded.Add(1)
		h.log.Error("a history record is too large for the server, not kept", "subject", r.subject, "bytes", len(r.data))
		return state
	}
	state = h.state(ctx, err)
	if state == historyAbsent {
		h.stats.notRecorded.Add(1)
		return state
	}
	h.keep(r)
	return state
}

// state asks JetStream whether the history stream exists, after a
// write failed with err (nil: a periodic check).
func (h *history) state(ctx context.Context, err error) int {
	cctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	_, serr := h.js.Stream(cctx, protocol.HistoryStream)
	switch {
	case errors.Is(serr, jetstream.ErrStreamNotFound):
		if err != nil {
			h.log.Info("the history stream does not exist, replies are not recorded (create it with `ccm-orch history init`)", "stream", protocol.HistoryStream)
		}
		return historyAbsent
	case serr == nil && err == nil:
		return historyOK
	}
	h.log.Warn("history unavailable, keeping records in the spool", "error", errors.Join(err, serr))
	return historyDown
}

// lateAck reports whether a publish failed only because its answer did
// not come in time (not because JetStream refused it, nor because the
// agent is stopping).
func lateAck(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout))
}

// publish writes one record, waiting up to times its timeout for the
// answer; already recorded is success.
func (h *history) publish(ctx context.Context, r record, times int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(times)*recordTimeout(h.timeout, len(r.data)))
	defer cancel()
	dup, err := jsstore.Publish(ctx, h.js, r.subject, r.msgID, r.header, r.data)
	if err != nil {
		return err
	}
	if dup {
		h.stats.historyDuplicates.Add(1)
	}
	h.stats.recorded.Add(1)
	return nil
}

// keep keeps a record in the spool.
func (h *history) keep(r record) {
	dropped, err := h.spool.add(spoolEntry{Subject: r.subject, MsgID: r.msgID, Header: r.header, Data: r.data, Kept: h.now()})
	if dropped > 0 {
		h.log.Warn("history spool full, dropped the oldest records", "dropped", dropped)
	}
	if err != nil {
		h.log.Error("could not keep a history record", "subject", r.subject, "error", err)
		return
	}
	h.stats.spooled.Add(1)
}

// flush sends the spooled records, oldest first, removing each once
// the stream holds it (already there counts). It stops at the first
// failure and reports whether the spool is empty.
func (h *history) flush(ctx context.Context) bool {
	names, err := h.spool.list()
	if err != nil {
		h.log.Error("could not read the history spool", "error", err)
		return false
	}
	if len(names) == 0 {
		return true
	}
	// One lookup of the stream for the whole spool: its handle reads what
	// it holds, its duplicate window says which records need no reading.
	cctx, cancel := context.WithTimeout(ctx, h.timeout)
	stream, err := h.js.Stream(cctx, protocol.HistoryStream)
	cancel()
	if err != nil {
		h.log.Debug("history still unavailable", "spooled", len(names), "error", err)
		return false
	}
	window := stream.CachedInfo().Config.Duplicates
	for _, name := range names {
		if ctx.Err() != nil {
			return false
		}
		e, err := h.spool.read(name)
		if err != nil {
			h.log.Error("dropping an unreadable spooled history record", "file", name, "error", err)
			_ = h.spool.remove(name)
			continue
		}
		r := record{subject: e.Subject, msgID: e.MsgID, header: nats.Header(e.Header), data: e.Data}
		if err := h.sendSpooled(ctx, stream, window, e.Kept, r); err != nil {
			h.log.Debug("history still unavailable", "spooled", len(names), "error", err)
			return false
		}
		if err := h.spool.remove(name); err != nil {
			h.log.Error("could not remove a sent history record from the spool", "file", name, "error", err)
			return false
		}
	}
	h.log.Info("sent the spooled history records", "records", len(names))
	return true
}

// sendSpooled writes a spooled record, kept in the spool at kept. An
// earlier attempt that timed out may have landed after all: the stream
// drops a copy with the same message id as a duplicate for its duplicate
// window (counted from when the first copy landed, after it was first
// sent, before it was kept), so a record kept less than half the window
// ago is sent as it is. An older one, or one whose time is unknown (kept
// by an earlier version), is sent only if the stream holds no record on
// its subject.
func (h *history) sendSpooled(ctx context.Context, stream jetstream.Stream, window time.Duration, kept time.Time, r record) error {
	if age := h.now().Sub(kept); kept.IsZero() || age < 0 || age >= window/2 {
		cctx, cancel := context.WithTimeout(ctx, h.timeout)
		done, err := jsstore.Recorded(cctx, stream, r.subject)
		cancel()
		if err != nil {
			return err
		}
		if done {
			h.stats.historyDuplicates.Add(1)
			return nil
		}
	}
	return h.publish(ctx, r, 1)
}

// SpoolStats describes the agent's history spool.
func (a *Agent) SpoolStats() SpoolStats { return a.fin.history.spool.stats() }

// SpoolDir is the directory of the agent's history spool.
func (a *Agent) SpoolDir() string { return a.fin.history.spool.dir }

// spoolDir is the spool directory below a state directory.
func spoolDir(stateDir string) string { return filepath.Join(stateDir, SpoolDirName) }

// errorsIsPayload reports whether err says the record is too large to ever
// be written, so spooling it would not help.
func errorsIsPayload(err error) bool { return tooLargeToRecord(err) }
