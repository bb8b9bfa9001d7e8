package orchestrator

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/natsconn"
	"github.com/ccm-fleet/ccm/protocol"
)

// historyTimeout bounds writing the request's record.
const historyTimeout = 5 * time.Second

// recordRequest writes the request's record (what was asked, of whom, by
// whom, when, with the expected set) to the history stream.
func (c *Client) recordRequest(ctx context.Context, id string, req *Request, res *Result) error {
	rec := protocol.HistoryRequest{
		Protocol:  protocol.HistoryRequestProtocol,
		RequestID: id,
		Created:   c.now().UTC(),
		Sender:    cmp.Or(req.Sender, c.sender),
		Noop:      req.Noop,
		Filter:    req.Filter,
		Discovery: res.Discovery,
		Expected:  res.Expected,
		Timeout:   protocol.Duration(req.Timeout),
		TTL:       protocol.Duration(req.TTL),
		Async:     req.Async,
		Ensure:    redactedEnsure(req.Ensure),
		Manifest:  req.ManifestName,

		TemplateFacts: res.TemplateFacts,
		Sample:        res.Sample,
	}
	if req.Narrow != nil && req.Narrow.Only != nil {
		rec.Listed = len(req.Narrow.Only)
	}
	if req.batching() {
		rec.Batch = req.window(len(res.Expected))
	}
	for _, d := range declaredResources(req.Manifest) {
		rec.Resources = append(rec.Resources, protocol.HistoryResource{Type: d.Type, Name: d.Name})
	}
	data, err := json.Marshal(&rec)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if c.js == nil {
		return jsstore.ErrNoHistory
	}
	header, err := c.signed(data)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, historyTimeout)
	defer cancel()
	_, err = jsstore.Publish(ctx, c.js, protocol.HistoryRequestSubject(id), protocol.HistoryMsgID(id, ""), header, data)
	return err
}

// redactedEnsure is the ensure request as history keeps it: a sensitive
// resource's content-bearing properties replaced (see
// protocol.RedactSensitive).
func redactedEnsure(e *protocol.EnsureRequest) *protocol.EnsureRequest {
	if e == nil {
		return nil
	}
	props, err := e.PropertiesMap()
	if err != nil {
		return e
	}
	red := protocol.RedactSensitive(props)
	if s, _ := props["sensitive"].(bool); !s {
		return e
	}
	raw, err := json.Marshal(red)
	if err != nil {
		return e
	}
	c := *e
	c.Properties = raw
	return &c
}

// sendAsync sends the request with no reply subject: the agents run it and
// record their replies in history only.
func (c *Client) sendAsync(id string, req *Request, body json.RawMessage, expected []string) error {
	subjects, perNode := c.requestSubjects(req.Filter, expected)
	fr := protocol.NewFleetRequest(id, c.now(), req.TTL)
	fr.Noop, fr.Filter, fr.Ensure, fr.Manifest = req.Noop, req.Filter, req.Ensure, body
	fr.Sender = c.publicKey
	if perNode || req.targeted() {
		fr.Targets = expected
	}
	data, err := encodeRequest(fr, req.MaxRequestBytes)
	if err != nil {
		return err
	}
	header, err := c.signed(data)
	if err != nil {
		return err
	}
	for _, s := range subjects {
		if err := c.nc.PublishMsg(natsconn.NewMsg(s, "", header, data)); err != nil {
			return fmt.Errorf("%w on %s: %w", ErrPublish, s, err)
		}
	}
	if err := c.nc.FlushTimeout(historyTimeout); err != nil {
		return fmt.Errorf("%w: %w", ErrPublish, err)
	}
	return nil
}

// HistoryRun is one request rebuilt from history.
type HistoryRun struct {
	// Request is the request's record.
	Request *protocol.HistoryRequest `json:"request"`
	// Recorded is when the server stored the request's record.
	Recorded time.Time `json:"recorded"`
	// Result is the run's report as the live run built it, except that
	// replies that came after their deadline count with the outcome they
	// report (and are listed in LateHosts), hosts never asked by a stopped
	// batch run show as no reply, and Elapsed runs from the request's
	// record to the last reply's.
	Result *Result `json:"result"`
}

// hostRecord is one host's first record of a run.
type hostRecord struct {
	reply *protocol.FleetReply
	late  bool
	time  time.Time
}

// History rebuilds the report of request id from its records: the request
// and every host's reply, late ones included. A request with no record is
// a *MissingRequestError (ErrNotFound) carrying the host records found; a
// missing history stream jsstore.ErrNoHistory.
func (c *Client) History(ctx context.Context, id string) (*HistoryRun, error) {
	if err := protocol.ValidateRequestID(id); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if c.js == nil {
		return nil, jsstore.ErrNoHistory
	}
	run := &HistoryRun{}
	var (
		recs                  = map[string]*hostRecord{}
		heads                 = map[string]hostTiming{}
		duplicates, malformed int
		incomplete            []string
	)
	err := jsstore.Read(ctx, c.js, jsstore.ReadOptions{Filter: protocol.HistoryRunSubjects(id), Consistent: true}, func(r jsstore.Record) error {
		if r.Err != nil {
			// A record kept in parts that cannot be joined: said, not
			// dropped.
			c.log.Warn("incomplete record in history", "request", id, "identity", r.Identity, "error", r.Err)
			malformed++
			if r.Identity != "" && !slices.Contains(incomplete, r.Identity) {
				incomplete = append(incomplete, r.Identity)
			}
			return nil
		}
		if r.Identity == "" {
			if run.Request != nil {
				duplicates++
				return nil
			}
			hr, err := protocol.DecodeHistoryRequest(r.Data, protocol.Limits{MaxBytes: maxRecordBytes})
			if err != nil {
				c.log.Warn("malformed request record in history", "request", id, "error", err)
				malformed++
				return nil
			}
			run.Request, run.Recorded = hr, r.Time
			return nil
		}
		reply, err := protocol.DecodeFleetReply(r.Data, protocol.Limits{MaxBytes: maxRecordBytes})
		switch {
		case err != nil || reply.RequestID != id || reply.Identity != r.Identity:
			malformed++
			return nil
		case recs[r.Identity] != nil:
			duplicates++
			return nil
		}
		recs[r.Identity] = &hostRecord{reply: reply, time: r.Time}
		heads[r.Identity] = timingOf(r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", id, err)
	}
	if run.Request == nil {
		// A run an agent started on its own carries its request in the
		// host record's header.
		for host := range recs {
			if hr := headerRequest(heads[host].request); hr != nil && hr.RequestID == id {
				run.Request, run.Recorded = hr, recs[host].time
				break
			}
		}
	}
	if run.Request == nil {
		return nil, missingRequest(id, recs)
	}
	timeout := time.Duration(run.Request.Timeout)
	for host, h := range heads {
		recs[host].late = h.late(timeout)
	}
	run.Result = rebuild(run.Request, run.Recorded, recs)
	run.Result.Duplicates, run.Result.Malformed = duplicates, malformed
	for _, host := range incomplete {
		if recs[host] == nil {
			run.Result.Incomplete = append(run.Result.Incomplete, host)
		}
	}
	slices.Sort(run.Result.Incomplete)
	return run, nil
}

// missingRequest is the error of a request without its own record, with
// the host records recs found for it. Whether a host's reply was a dry run
// is taken from its events, as the request that would say is missing.
func missingRequest(id string, recs map[string]*hostRecord) error {
	e := &MissingRequestError{RequestID: id, Hosts: make([]HostResult, 0, len(recs))}
	for _, rec := range recs {
		noop := slices.ContainsFunc(rec.reply.Events, func(ev *protocol.TransactionEvent) bool { return ev != nil && ev.Noop })
		e.Hosts = append(e.Hosts, newHostResult(noop, rec.reply))
	}
	slices.SortFunc(e.Hosts, func(a, b HostResult) int { return cmp.Compare(a.Identity, b.Identity) })
	return e
}

// maxRecordBytes bounds one history record read back.
const maxRecordBytes = protocol.MaxWholeBytes

// hostTiming is when an agent received a request and sent its reply, by
// its own clock (the record's headers).
type hostTiming struct {
	received, replied time.Time
	// request is the Ccm-Request header of a scheduled run's record
	request string
	// watch is what a scheduled run's record says of failed watch
	// repairs
	watch watchFailures
}

func timingOf(r jsstore.Record) hostTiming {
	return hostTiming{
		received: protocol.ParseHeaderTime(r.Header.Get(protocol.HeaderReceived)),
		replied:  protocol.ParseHeaderTime(r.Header.Get(protocol.HeaderReplied)),
		request:  r.Header.Get(protocol.HeaderRequest),
		watch:    watchFailuresOf(r.Header),
	}
}

// headerRequest decodes a Ccm-Request header; nil when empty or invalid.
func headerRequest(h string) *protocol.HistoryRequest {
	if h == "" {
		return nil
	}
	hr, err := protocol.DecodeHistoryRequest([]byte(h), protocol.Limits{MaxBytes: maxRecordBytes})
	if err != nil {
		return nil
	}
	return hr
}

// late reports whether the reply came after the host's deadline: more than
// timeout after the request reached the agent.
func (t hostTiming) late(timeout time.Duration) bool {
	if t.received.IsZero() || t.replied.IsZero() || timeout <= 0 {
		return false
	}
	return t.replied.Sub(t.received) > timeout
}

// rebuild makes the run's Result from its request record and host records.
func rebuild(req *protocol.HistoryRequest, recorded time.Time, recs map[string]*hostRecord) *Result {
	res := &Result{
		RequestID: req.RequestID,
		Noop:      req.Noop,
		Expected:  slices.Clone(req.Expected),
		Discovery: req.Discovery,
		Async:     req.Async,

		TemplateFacts: slices.Clone(req.TemplateFacts),
		Sample:        req.Sample,
	}
	expected := make(map[string]bool, len(req.Expected))
	hosts := make([]HostResult, 0, len(req.Expected))
	last := recorded
	for _, id := range uniqueSorted(req.Expected) {
		expected[id] = true
		rec := recs[id]
		if rec == nil {
			hosts = append(hosts, HostResult{Identity: id, Outcome: OutcomeNoReply, Events: []*protocol.TransactionEvent{}})
			continue
		}
		hosts = append(hosts, newHostResult(req.Noop, rec.reply))
		if rec.late {
			res.LateHosts = append(res.LateHosts, id)
		}
		if rec.time.After(last) {
			last = rec.time
		}
	}
	for id := range recs {
		if !expected[id] && len(res.Unexpected) < MaxUnexpected {
			res.Unexpected = append(res.Unexpected, id)
		}
	}
	res.Late = len(res.LateHosts)
	res.finish(hosts, historyNames(req), time.Now())
	res.Elapsed = last.Sub(recorded)
	return res
}

// historyNames names the resources of a recorded request's replies as the
// request declared them.
func historyNames(req *protocol.HistoryRequest) *refNamer {
	if req.Ensure != nil {
		return ensureRefs(requestedRef(req.Ensure))
	}
	decl := make([]DeclaredResource, len(req.Resources))
	for i, r := range req.Resources {
		decl[i] = DeclaredResource{Type: r.Type, Name: r.Name}
	}
	return manifestRefs(decl)
}

// isNotFound reports a record that does not exist.
func isNotFound(err error) bool { return errors.Is(err, jetstream.ErrMsgNotFound) }
