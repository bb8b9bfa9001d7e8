package protocol

import (
	"encoding/json"
	"time"
)

// TransactionEvent records what happened when one resource was applied.
type TransactionEvent struct {
	Protocol        string        `json:"protocol"`
	EventID         string        `json:"event_id"`
	Timestamp       time.Time     `json:"timestamp"`
	Type            string        `json:"type"`
	Provider        string        `json:"provider"`
	Name            string        `json:"name"`
	Alias           string        `json:"alias,omitempty"`
	RequestedEnsure string        `json:"requested_ensure"`
	FinalEnsure     string        `json:"final_ensure"`
	Duration        time.Duration `json:"duration"`
	// Properties are the resolved properties the resource was applied with.
	Properties any `json:"properties"`
	// Status is the type's state document after the apply, nil when the
	// resource never reached its provider.
	Status            State    `json:"status"`
	NoopMessage       string   `json:"noop_message,omitempty"`
	Errors            []string `json:"error"`
	Changed           bool     `json:"changed"`
	Refreshed         bool     `json:"refreshed"`
	Failed            bool     `json:"failed"`
	Skipped           bool     `json:"skipped"`
	Noop              bool     `json:"noop"`
	UnmetRequirements []string `json:"unmet_requirements"`
	// Diff says how the resource differed from its desired state, for a
	// change or (under noop) a would-change; absent otherwise. Agents that
	// predate diffs never send it.
	Diff *Diff `json:"diff,omitempty"`
	// HealthChecks are the results of the resource's health checks, in
	// order; a CRITICAL one fails the resource.
	HealthChecks []*HealthCheckResult `json:"health_checks,omitempty"`
}

// Health check statuses, nagios style.
const (
	HealthOK       = "OK"
	HealthWarning  = "WARNING"
	HealthCritical = "CRITICAL"
	HealthUnknown  = "UNKNOWN"
)

// HealthStatus is the status of a health check's exit code: 0 OK, 1
// WARNING, 2 CRITICAL, anything else UNKNOWN.
func HealthStatus(code int) string {
	switch code {
	case 0:
		return HealthOK
	case 1:
		return HealthWarning
	case 2:
		return HealthCritical
	}
	return HealthUnknown
}

// HealthCheckResult is the outcome of one health check: its last try.
type HealthCheckResult struct {
	Name    string `json:"name"`
	Command string `json:"command"`
	// Status is OK, WARNING, CRITICAL or UNKNOWN.
	Status string `json:"status"`
	// Code is the exit code of the last try, -1 when it did not exit
	// (not found, timed out).
	Code int `json:"code"`
	// Message is the first line of the last try's output (or why it
	// could not run).
	Message  string        `json:"message"`
	Tries    int           `json:"tries"`
	Duration time.Duration `json:"duration"`
}

// NewTransactionEvent starts an event for the resource typeName#name.
func NewTransactionEvent(id, typeName, name, alias string) *TransactionEvent {
	return &TransactionEvent{
		Protocol:          TransactionEventProtocol,
		EventID:           id,
		Timestamp:         time.Now().UTC(),
		Type:              typeName,
		Name:              name,
		Alias:             alias,
		Errors:            []string{},
		UnmetRequirements: []string{},
	}
}

// ResourceID returns the "type#name" reference of the event's resource.
func (e *TransactionEvent) ResourceID() string { return e.Type + "#" + e.Name }

// Event outcomes, as TransactionEvent.Outcome names them: one token each,
// the same in JSON documents and metric labels. Prose spells them with
// spaces ("would change").
const (
	EventStable      = "stable"
	EventChanged     = "changed"
	EventWouldChange = "would_change"
	EventRefreshed   = "refreshed"
	EventFailed      = "failed"
	EventSkipped     = "skipped"
)

// EventOutcomes lists every event outcome.
var EventOutcomes = []string{EventStable, EventChanged, EventWouldChange, EventRefreshed, EventFailed, EventSkipped}

// Outcome names the event's result in one token: failed, skipped, changed
// (or would_change under noop), refreshed or stable.
func (e *TransactionEvent) Outcome() string {
	switch {
	case e.Failed:
		return EventFailed
	case e.Skipped:
		return EventSkipped
	case e.Changed && e.Noop:
		return EventWouldChange
	case e.Changed:
		return EventChanged
	case e.Refreshed:
		return EventRefreshed
	default:
		return EventStable
	}
}

// eventJSON is TransactionEvent without its JSON methods. Encoding a type
// with a MarshalJSON method makes encoding/json validate and compact the
// method's output again at every level, which costs more than encoding the
// event itself; encoders of events go through eventJSON instead.
type eventJSON TransactionEvent

// wire returns the event as encoded: the always-present lists as [] rather
// than null.
func (e *TransactionEvent) wire() *eventJSON {
	if e.Errors != nil && e.UnmetRequirements != nil {
		return (*eventJSON)(e)
	}
	c := *e
	if c.Errors == nil {
		c.Errors = []string{}
	}
	if c.UnmetRequirements == nil {
		c.UnmetRequirements = []string{}
	}
	return (*eventJSON)(&c)
}

// MarshalJSON keeps the always-present lists as [] rather than null.
func (e *TransactionEvent) MarshalJSON() ([]byte, error) {
	encodes.Add(1)
	return json.Marshal(e.wire())
}

// eventDecode is an event as decoded: the status kept raw until the
// event's type says which state it is.
type eventDecode struct {
	eventJSON
	Status json.RawMessage `json:"status"`
	// Properties stay raw JSON: decoding them into maps would cost more
	// than the rest of the event, and they are only passed on.
	Properties json.RawMessage `json:"properties"`
}

// event turns a decoded event into a TransactionEvent, decoding its status.
func (d *eventDecode) event() (*TransactionEvent, error) {
	e := (*TransactionEvent)(&d.eventJSON)
	e.Status = nil
	e.Properties = nil
	if len(d.Properties) > 0 && string(d.Properties) != "null" {
		e.Properties = d.Properties
	}
	if len(d.Status) > 0 && string(d.Status) != "null" {
		st, err := DecodeState(e.Type, d.Status)
		if err != nil {
			return nil, within("status", err)
		}
		e.Status = st
	}
	return e, nil
}

// UnmarshalJSON decodes the status into the state type named by the event's
// type. The properties are kept as raw JSON (a json.RawMessage), which
// encodes back to the same document.
func (e *TransactionEvent) UnmarshalJSON(data []byte) error {
	var d eventDecode
	if err := DecodeJSONStrict(data, &d); err != nil {
		return err
	}
	ev, err := d.event()
	if err != nil {
		return err
	}
	*e = *ev
	return nil
}
