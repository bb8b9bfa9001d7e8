package orchestrator

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// Reconciliation bounds: after the connection comes back during a run, the
// hosts that have not replied are looked up in history every
// reconcileInterval, each read bounded by reconcileReadTimeout and
// reconcileBatch records, until every asked host is accounted for or its
// deadline passed.
const (
	reconcileInterval    = time.Second
	reconcileReadTimeout = 5 * time.Second
	reconcileBatch       = 1000
)

// errBatchFull ends a history read that took reconcileBatch records; the
// next read goes on from there.
var errBatchFull = errors.New("history batch full")

// historyPoll is what one read of the run's history records found.
type historyPoll struct {
	records []jsstore.Record
	err     error
}

// reconciler watches the connection during a run and, once it came back,
// reads the run's history records for the replies lost while it was down.
// Its fields are used by the runner's goroutine only; each read runs on a
// goroutine of its own, at most one at a time, which stop waits for.
type reconciler struct {
	c  *Client
	id string
	// status receives the connection's status changes
	status chan nats.Status
	// reconnects counts the times the connection came back
	reconnects int
	// baseline is the connection's reconnect count when the run started
	baseline uint64
	// active is set once the connection came back: history is read
	active  bool
	polling bool
	next    time.Time // when the next read starts
	lastSeq uint64    // the last record seen; the next read starts after it
	results chan historyPoll
	// cancelRead ends the read in progress
	cancelRead context.CancelFunc
	wg         sync.WaitGroup
}

// newReconciler starts listening to nc's status changes. stop ends it.
func newReconciler(c *Client, id string) *reconciler {
	return &reconciler{
		c: c, id: id,
		status:     c.nc.StatusChanged(nats.CONNECTED, nats.DISCONNECTED),
		baseline:   c.nc.Stats().Reconnects,
		results:    make(chan historyPoll, 1),
		cancelRead: func() {},
	}
}

// stop ends a read in progress, waits for it and stops listening.
func (rc *reconciler) stop() {
	rc.cancelRead()
	rc.wg.Wait()
	rc.c.nc.RemoveStatusListener(rc.status)
}

// changed handles one status change: a connection that is back starts
// the reads at once. A status dropped because the listener's buffer was
// full is caught up by checkReconnects.
func (rc *reconciler) changed(s nats.Status, now time.Time) {
	switch s {
	case nats.DISCONNECTED:
		rc.c.log.Warn("connection lost during a run: replies sent meanwhile are lost, history is read when it is back", "request", rc.id)
	case nats.CONNECTED:
		rc.checkReconnects(now)
	}
}

// checkReconnects activates the reads when the connection's reconnect
// count grew since the run started.
func (rc *reconciler) checkReconnects(now time.Time) {
	n := int(rc.c.nc.Stats().Reconnects - rc.baseline)
	if n <= rc.reconnects {
		return
	}
	rc.reconnects = n
	rc.c.log.Info("connection back during a run, reading the missing replies from history", "request", rc.id)
	rc.active = true
	if !rc.polling {
		rc.next = now
	}
}

// due reports when the next read is due: zero when none is.
func (rc *reconciler) due() time.Time {
	if rc.c.js == nil || !rc.active || rc.polling {
		return time.Time{}
	}
	return rc.next
}

// poll starts a read of the run's history records after the last one
// seen, bounded by reconcileReadTimeout and by until (the last deadline),
// when one is due at now.
func (rc *reconciler) poll(ctx context.Context, now, until time.Time) {
	if rc.c.js == nil || !rc.active || rc.polling || rc.next.After(now) {
		return
	}
	rc.polling = true
	end := now.Add(reconcileReadTimeout)
	if until.Before(end) {
		end = until
	}
	pctx, cancel := context.WithDeadline(ctx, end)
	rc.cancelRead = cancel
	start := rc.lastSeq + 1
	rc.wg.Add(1)
	go func() {
		defer rc.wg.Done()
		defer cancel()
		var recs []jsstore.Record
		err := jsstore.Read(pctx, rc.c.js, jsstore.ReadOptions{Filter: protocol.HistoryRunSubjects(rc.id), StartSeq: start}, func(r jsstore.Record) error {
			recs = append(recs, r)
			if len(recs) >= reconcileBatch {
				return errBatchFull
			}
			return nil
		})
		if errors.Is(err, errBatchFull) {
			err = nil
		}
		rc.results <- historyPoll{records: recs, err: err} // one read at a time: never blocks
	}()
}

// read takes the result of a read: it returns the records to take and
// schedules the next read.
func (rc *reconciler) read(p historyPoll, now time.Time) []jsstore.Record {
	rc.polling = false
	rc.next = now.Add(reconcileInterval)
	if p.err != nil {
		rc.c.log.Info("could not read history yet, trying again", "request", rc.id, "error", p.err)
	}
	for _, r := range p.records {
		rc.lastSeq = max(rc.lastSeq, r.Seq)
	}
	if len(p.records) >= reconcileBatch {
		rc.next = now // more are waiting
	}
	return p.records
}
