package protocol

import (
	"encoding/json"
	"fmt"
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

// Outcome names the event's result in one word: failed, skipped, changed
// (or "would change" under noop), refreshed or stable.
func (e *TransactionEvent) Outcome() string {
	switch {
	case e.Failed:
		return "failed"
	case e.Skipped:
		return "skipped"
	case e.Changed && e.Noop:
		return "would change"
	case e.Changed:
		return "changed"
	case e.Refreshed:
		return "refreshed"
	default:
		return "stable"
	}
}

// MarshalJSON keeps the always-present lists as [] rather than null.
func (e *TransactionEvent) MarshalJSON() ([]byte, error) {
	type plain TransactionEvent
	c := plain(*e)
	if c.Errors == nil {
		c.Errors = []string{}
	}
	if c.UnmetRequirements == nil {
		c.UnmetRequirements = []string{}
	}
	return json.Marshal(c)
}

// UnmarshalJSON decodes the status into the state type named by the event's type.
func (e *TransactionEvent) UnmarshalJSON(data []byte) error {
	type plain TransactionEvent
	var raw struct {
		plain
		Status json.RawMessage `json:"status"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*e = TransactionEvent(raw.plain)
	e.Status = nil
	if len(raw.Status) > 0 && string(raw.Status) != "null" {
		st, err := DecodeState(e.Type, raw.Status)
		if err != nil {
			return fmt.Errorf("transaction event %s: %w", e.EventID, err)
		}
		e.Status = st
	}
	return nil
}
