package orchestrator

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// History listing defaults and bounds.
const (
	// DefaultHistoryLimit is how many requests HistoryList returns by
	// default.
	DefaultHistoryLimit = 20
	// MaxHistoryLimit bounds HistoryListOptions.Limit.
	MaxHistoryLimit = 10000
)

// HistoryListOptions select the requests HistoryList returns.
type HistoryListOptions struct {
	// Since skips requests recorded before it; zero: from the start.
	Since time.Time
	// Host, when set, keeps the requests that expected this host or that
	// it answered.
	Host string
	// Limit is how many of the most recent requests to return; default
	// DefaultHistoryLimit.
	Limit int
}

// HistorySummary is one request in a listing.
type HistorySummary struct {
	RequestID string    `json:"request_id"`
	Time      time.Time `json:"time"`
	Sender    string    `json:"sender,omitempty"`
	// Asked says what was asked: "ensure file#/etc/motd present",
	// "apply site.yaml", "audit site.yaml".
	Asked string `json:"asked"`
	// Filter is the filter as written on the command line, "" for all.
	Filter     string            `json:"filter"`
	Noop       bool              `json:"noop"`
	Async      bool              `json:"async,omitempty"`
	Expected   int               `json:"expected"`
	Replied    int               `json:"replied"`
	Hosts      HostCounts        `json:"hosts"`
	Late       int               `json:"late"`
	Unexpected int               `json:"unexpected"`
	ExitCode   protocol.ExitCode `json:"exit_code"`
}

// HistoryList returns the most recent requests (newest first) with their
// host counts as rebuilt from history (see History).
func (c *Client) HistoryList(ctx context.Context, opts HistoryListOptions) ([]HistorySummary, error) {
	if opts.Limit == 0 {
		opts.Limit = DefaultHistoryLimit
	}
	if opts.Limit < 0 || opts.Limit > MaxHistoryLimit {
		return nil, fmt.Errorf("%w: limit %d must be between 1 and %d", ErrInvalid, opts.Limit, MaxHistoryLimit)
	}
	if opts.Host != "" {
		if err := protocol.ValidateIdentity(opts.Host); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	if c.js == nil {
		return nil, jsstore.ErrNoHistory
	}
	// The request records' headers say which requests there are; each
	// listed one is then rebuilt from its own records, newest first.
	type listed struct {
		seq uint64
		id  string
	}
	var found []listed
	err := jsstore.Read(ctx, c.js, jsstore.ReadOptions{
		Filter: protocol.HistorySubjectPrefix + ".*." + protocol.HistoryRequestToken, Since: opts.Since, HeadersOnly: true,
	}, func(r jsstore.Record) error {
		found = append(found, listed{r.Seq, r.RequestID})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	// The runs agents started on their own (assignments) have no request
	// record: their host records carry the request. Finding them means
	// reading the headers of every host record in the window (of one host
	// with Host), which costs more than the request records alone.
	filter := protocol.HistorySubjects
	if opts.Host != "" {
		filter = protocol.HistorySubjectPrefix + ".*." + protocol.EncodeToken(opts.Host)
	}
	err = jsstore.Read(ctx, c.js, jsstore.ReadOptions{Filter: filter, Since: opts.Since, HeadersOnly: true}, func(r jsstore.Record) error {
		if r.Identity != "" && r.Header.Get(protocol.HeaderRequest) != "" {
			found = append(found, listed{r.Seq, r.RequestID})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	slices.SortFunc(found, func(a, b listed) int { return cmp.Compare(b.seq, a.seq) })
	ids := make([]string, len(found))
	for i, f := range found {
		ids[i] = f.id
	}
	out := []HistorySummary{}
	for _, id := range ids {
		if len(out) >= opts.Limit {
			break
		}
		run, err := c.History(ctx, id)
		if err != nil {
			c.log.Warn("could not rebuild a request from history", "request", id, "error", err)
			continue
		}
		if opts.Host != "" && !run.involves(opts.Host) {
			continue
		}
		out = append(out, run.Summary())
	}
	return out, nil
}

// involves reports whether the run expected host or heard from it.
func (r *HistoryRun) involves(host string) bool {
	if slices.Contains(r.Result.Expected, host) || slices.Contains(r.Result.Unexpected, host) {
		return true
	}
	return false
}

// Summary is the run's line in a listing.
func (r *HistoryRun) Summary() HistorySummary {
	return HistorySummary{
		RequestID:  r.Request.RequestID,
		Time:       r.Request.Created,
		Sender:     r.Request.Sender,
		Asked:      DescribeRequest(r.Request),
		Filter:     FilterString(r.Request.Filter),
		Noop:       r.Request.Noop,
		Async:      r.Request.Async,
		Expected:   len(r.Result.Expected),
		Replied:    r.Result.Replied,
		Hosts:      r.Result.Summary.Hosts,
		Late:       len(r.Result.LateHosts),
		Unexpected: len(r.Result.Unexpected),
		ExitCode:   r.Result.ExitCode,
	}
}

// DescribeRequest says what a recorded request asked: "ensure
// file#/etc/motd present", "apply site.yaml" or "audit site.yaml".
func DescribeRequest(r *protocol.HistoryRequest) string {
	if r.Ensure != nil {
		s := "ensure " + r.Ensure.Type
		if props, err := r.Ensure.PropertiesMap(); err == nil {
			if name, ok := props["name"].(string); ok {
				s += "#" + name
			}
			if ens, ok := props["ensure"].(string); ok && ens != "" {
				s += " " + ens
			}
		}
		return s
	}
	verb := "apply"
	if r.Noop {
		verb = "audit"
	}
	what := verb + " a manifest"
	if r.Manifest != "" {
		what = verb + " " + r.Manifest
	}
	switch {
	case r.Assignment != "":
		what = fmt.Sprintf("assignment %s r%d (%s): %s", r.Assignment, r.Revision, r.Trigger, what)
	case r.Discovery == protocol.DiscoverySource:
		what = fmt.Sprintf("source %s (%s): %s", r.Manifest, r.Trigger, verb)
	}
	return what
}

// FilterString writes a filter as on the command line: its terms, then
// host=ID for each --host, then select(EXPR) for a select expression,
// separated by spaces; "" for no filter.
func FilterString(f *protocol.Filter) string {
	if f == nil {
		return ""
	}
	parts := make([]string, 0, len(f.Where)+len(f.Hosts))
	for _, t := range f.Where {
		parts = append(parts, t.String())
	}
	for _, h := range f.Hosts {
		parts = append(parts, "host="+h)
	}
	if f.Select != "" {
		parts = append(parts, "select("+f.Select+")")
	}
	return strings.Join(parts, " ")
}

// HostEntry is one host's result of one request, in its timeline.
type HostEntry struct {
	RequestID string    `json:"request_id"`
	Time      time.Time `json:"time"`
	// Asked says what was asked (see DescribeRequest); empty when the
	// request's own record is gone.
	Asked    string                       `json:"asked"`
	Noop     bool                         `json:"noop"`
	Outcome  string                       `json:"outcome"`
	Late     bool                         `json:"late"`
	Events   []*protocol.TransactionEvent `json:"events"`
	Error    *protocol.Error              `json:"error"`
	Duration time.Duration                `json:"duration"`
	// WatchFailures, WatchError and WatchFailedAt are, for a run of an
	// assignment whose watch repairs failed on the host, how many did,
	// the latest one's error and time (see HostStatus).
	WatchFailures int       `json:"watch_failures,omitempty"`
	WatchError    string    `json:"watch_error,omitempty"`
	WatchFailedAt time.Time `json:"watch_failed_at,omitzero"`
}

// setWatch copies what a record says of failed watch repairs.
func (e *HostEntry) setWatch(w watchFailures) {
	e.WatchFailures, e.WatchError, e.WatchFailedAt = w.count, w.err, w.at
}

// HistoryHost returns one host's results since a time (zero: from the
// start), oldest first, at most limit (the most recent; 0: all). A run
// that expected the host and holds no record of it is in the timeline as
// no_reply once its reply deadline has passed.
func (c *Client) HistoryHost(ctx context.Context, identity string, since time.Time, limit int) ([]HostEntry, error) {
	if err := protocol.ValidateIdentity(identity); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if limit < 0 {
		return nil, fmt.Errorf("%w: limit %d is negative", ErrInvalid, limit)
	}
	if c.js == nil {
		return nil, jsstore.ErrNoHistory
	}
	out := []HostEntry{}
	requests := map[string]*protocol.HistoryRequest{}
	seen := map[string]bool{}
	err := jsstore.Read(ctx, c.js, jsstore.ReadOptions{
		Filter: protocol.HistorySubjectPrefix + ".*." + protocol.EncodeToken(identity), Since: since,
	}, func(r jsstore.Record) error {
		reply, err := protocol.DecodeFleetReply(r.Data, protocol.Limits{MaxBytes: maxRecordBytes})
		switch {
		case r.Err != nil:
			// A record whose parts cannot be joined is said, not dropped.
			reply = protocol.NewFleetReply(r.RequestID, identity, r.Time)
			reply.Error = protocol.NewError(protocol.CodeInternal, "the history record of this run is incomplete: %s", r.Err)
		case err != nil || reply.Identity != identity:
			return nil
		}
		seen[r.RequestID] = true
		req, known := requests[r.RequestID]
		if !known {
			if hr := headerRequest(r.Header.Get(protocol.HeaderRequest)); hr != nil && hr.RequestID == r.RequestID {
				req = hr
			} else {
				req = c.requestRecord(ctx, r.RequestID)
			}
			requests[r.RequestID] = req
		}
		e := HostEntry{RequestID: r.RequestID, Time: r.Time, Events: reply.Events, Error: reply.Error, Duration: reply.Duration}
		e.setWatch(watchFailuresOf(r.Header))
		if e.Events == nil {
			e.Events = []*protocol.TransactionEvent{}
		}
		if req != nil {
			e.Asked, e.Noop = DescribeRequest(req), req.Noop
			e.Late = timingOf(r).late(time.Duration(req.Timeout))
		}
		e.Outcome = hostOutcome(e.Noop, reply)
		out = append(out, e)
		if limit > 0 && len(out) > limit {
			out = out[1:]
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", identity, err)
	}
	missed, err := c.noReplies(ctx, identity, since, seen)
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", identity, err)
	}
	if len(missed) == 0 {
		return out, nil
	}
	out = append(out, missed...)
	slices.SortStableFunc(out, func(a, b HostEntry) int { return a.Time.Compare(b.Time) })
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

// noReplies lists the runs since since that expected identity, hold no
// record of it (seen lists those that do) and whose reply deadline has
// passed: each as a no_reply entry at the time of the request's record.
// Only request records naming the identity are decoded.
func (c *Client) noReplies(ctx context.Context, identity string, since time.Time, seen map[string]bool) ([]HostEntry, error) {
	// Identities are ASCII letters, digits and ".-_": quoted, as the
	// record's expected list writes them.
	needle := []byte(strconv.Quote(identity))
	now := c.now()
	var out []HostEntry
	err := jsstore.Read(ctx, c.js, jsstore.ReadOptions{
		Filter: protocol.HistorySubjectPrefix + ".*." + protocol.HistoryRequestToken, Since: since,
	}, func(r jsstore.Record) error {
		if r.Err != nil || seen[r.RequestID] || !bytes.Contains(r.Data, needle) {
			return nil
		}
		req, err := protocol.DecodeHistoryRequest(r.Data, protocol.Limits{MaxBytes: maxRecordBytes})
		if err != nil || !slices.Contains(req.Expected, identity) || now.Before(req.Created.Add(time.Duration(req.Timeout))) {
			return nil
		}
		out = append(out, HostEntry{RequestID: req.RequestID, Time: r.Time, Asked: DescribeRequest(req), Noop: req.Noop,
			Outcome: OutcomeNoReply, Events: []*protocol.TransactionEvent{}})
		return nil
	})
	return out, err
}

// requestRecord reads one request's record; nil when it is gone or does
// not decode.
func (c *Client) requestRecord(ctx context.Context, id string) *protocol.HistoryRequest {
	r, err := jsstore.Get(ctx, c.js, protocol.HistoryRequestSubject(id))
	if err != nil {
		if !isNotFound(err) {
			c.log.Warn("could not read a request record", "request", id, "error", err)
		}
		return nil
	}
	req, err := protocol.DecodeHistoryRequest(r.Data, protocol.Limits{MaxBytes: maxRecordBytes})
	if err != nil {
		return nil
	}
	return req
}
