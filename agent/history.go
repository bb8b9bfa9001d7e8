package agent

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// record is one reply on its way to the history stream.
type record struct {
	subject, msgID string
	header         nats.Header
	data           []byte
}

// newRecord builds the history record of reply (encoded as data, signed
// with sig: the record keeps the signature headers), received
// at received and sent now.
func (a *Agent) newRecord(reply *protocol.FleetReply, data []byte, sig string, received time.Time) record {
	h := nats.Header{}
	h.Set(protocol.HeaderReceived, protocol.FormatHeaderTime(received))
	h.Set(protocol.HeaderReplied, protocol.FormatHeaderTime(a.now()))
	h.Set(protocol.HeaderSigner, a.publicKey)
	h.Set(protocol.HeaderSignature, sig)
	return record{
		subject: protocol.HistorySubject(reply.RequestID, a.cfg.Identity),
		msgID:   protocol.HistoryMsgID(reply.RequestID, a.cfg.Identity),
		header:  h,
		data:    data,
	}
}

// queueRecord hands a record to the historian; when its queue is full the
// record goes to the spool at once, so a caller never waits on JetStream.
func (a *Agent) queueRecord(r record) {
	a.mu.Lock()
	if !a.recordsClosed {
		select {
		case a.records <- r:
			a.mu.Unlock()
			return
		default:
		}
	}
	a.mu.Unlock()
	a.spoolRecord(r)
}

// closeRecords stops the historian taking records; later ones are spooled.
func (a *Agent) closeRecords() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.recordsClosed {
		a.recordsClosed = true
		close(a.records)
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

// historian writes records to the history stream one at a time. When a
// write fails it asks JetStream about the stream: no stream means history
// is not set up and records are dropped (logged once); no answer means
// JetStream is unavailable and records go to the spool without trying,
// until a retry every HistoryRetry finds JetStream back and sends the spool.
// It returns when records is closed and drained, after one last try of the
// spool.
func (a *Agent) historian(ctx context.Context) {
	ticker := time.NewTicker(a.cfg.HistoryRetry)
	defer ticker.Stop()
	state := historyOK
	if a.spool.stats().Records > 0 {
		state = historyDown
	}
	for {
		select {
		case r, ok := <-a.records:
			if !ok {
				if state == historyOK && a.spool.stats().Records > 0 {
					a.flushSpool(ctx)
				}
				return
			}
			switch state {
			case historyDown:
				a.spoolRecord(r)
				continue
			case historyAbsent:
				a.stats.notRecorded.Add(1)
				continue
			}
			err := a.publishRecord(ctx, r)
			switch {
			case err == nil:
				if a.spool.stats().Records > 0 && !a.flushSpool(ctx) {
					state = historyDown
				}
				continue
			case errorsIsPayload(err):
				a.stats.notRecorded.Add(1)
				a.log.Error("a history record is too large for the server, not kept", "subject", r.subject, "bytes", len(r.data))
				continue
			}
			state = a.historyState(ctx, err)
			if state == historyAbsent {
				a.stats.notRecorded.Add(1)
				continue
			}
			a.spoolRecord(r)
		case <-ticker.C:
			switch state {
			case historyAbsent:
				if a.historyState(ctx, nil) == historyOK {
					a.log.Info("the history stream exists now, recording replies")
					state = historyOK
				}
			case historyDown:
				if a.flushSpool(ctx) {
					state = historyOK
				}
			}
		}
	}
}

// historyState asks JetStream whether the history stream exists, after a
// write failed with err (nil: a periodic check).
func (a *Agent) historyState(ctx context.Context, err error) int {
	cctx, cancel := context.WithTimeout(ctx, a.cfg.HistoryTimeout)
	defer cancel()
	_, serr := a.js.Stream(cctx, protocol.HistoryStream)
	switch {
	case errors.Is(serr, jetstream.ErrStreamNotFound):
		if err != nil {
			a.log.Info("the history stream does not exist, replies are not recorded (create it with `ccm-orch history init`)", "stream", protocol.HistoryStream)
		}
		return historyAbsent
	case serr == nil && err == nil:
		return historyOK
	}
	a.log.Warn("history unavailable, keeping records in the spool", "error", errors.Join(err, serr))
	return historyDown
}

// publishRecord writes one record; already recorded is success.
func (a *Agent) publishRecord(ctx context.Context, r record) error {
	ctx, cancel := context.WithTimeout(ctx, recordTimeout(a.cfg.HistoryTimeout, len(r.data)))
	defer cancel()
	dup, err := jsstore.Publish(ctx, a.js, r.subject, r.msgID, r.header, r.data)
	if err != nil {
		return err
	}
	if dup {
		a.stats.historyDuplicates.Add(1)
	}
	a.stats.recorded.Add(1)
	return nil
}

// spoolRecord keeps a record in the spool.
func (a *Agent) spoolRecord(r record) {
	dropped, err := a.spool.add(spoolEntry{Subject: r.subject, MsgID: r.msgID, Header: r.header, Data: r.data})
	if dropped > 0 {
		a.log.Warn("history spool full, dropped the oldest records", "dropped", dropped)
	}
	if err != nil {
		a.log.Error("could not keep a history record", "subject", r.subject, "error", err)
		return
	}
	a.stats.spooled.Add(1)
}

// flushSpool sends the spooled records, oldest first, removing each once
// the stream holds it (already there counts). It stops at the first
// failure and reports whether the spool is empty.
func (a *Agent) flushSpool(ctx context.Context) bool {
	names, err := a.spool.list()
	if err != nil {
		a.log.Error("could not read the history spool", "error", err)
		return false
	}
	for _, name := range names {
		if ctx.Err() != nil {
			return false
		}
		e, err := a.spool.read(name)
		if err != nil {
			a.log.Error("dropping an unreadable spooled history record", "file", name, "error", err)
			_ = a.spool.remove(name)
			continue
		}
		r := record{subject: e.Subject, msgID: e.MsgID, header: nats.Header(e.Header), data: e.Data}
		if err := a.sendSpooled(ctx, r); err != nil {
			a.log.Debug("history still unavailable", "spooled", len(names), "error", err)
			return false
		}
		if err := a.spool.remove(name); err != nil {
			a.log.Error("could not remove a sent history record from the spool", "file", name, "error", err)
			return false
		}
	}
	if len(names) > 0 {
		a.log.Info("sent the spooled history records", "records", len(names))
	}
	return true
}

// sendSpooled writes a spooled record unless the stream already holds one
// for its subject (an earlier attempt that timed out may have landed after
// all, even past the duplicate window).
func (a *Agent) sendSpooled(ctx context.Context, r record) error {
	cctx, cancel := context.WithTimeout(ctx, a.cfg.HistoryTimeout)
	defer cancel()
	done, err := jsstore.Recorded(cctx, a.js, r.subject)
	if err != nil {
		return err
	}
	if done {
		a.stats.historyDuplicates.Add(1)
		return nil
	}
	return a.publishRecord(ctx, r)
}

// SpoolStats describes the agent's history spool.
func (a *Agent) SpoolStats() SpoolStats { return a.spool.stats() }

// SpoolDir is the directory of the agent's history spool.
func (a *Agent) SpoolDir() string { return a.spool.dir }

// spoolDir is the spool directory below a state directory.
func spoolDir(stateDir string) string { return filepath.Join(stateDir, SpoolDirName) }

// errorsIsPayload reports whether err says the record is too large to ever
// be written, so spooling it would not help.
func errorsIsPayload(err error) bool { return tooLargeToRecord(err) }
