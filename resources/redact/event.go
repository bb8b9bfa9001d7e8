package redact

import (
	"encoding/json"
	"reflect"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
)

// contentKeys are the keys of a resource's state whose values are what the
// resource holds or printed, never recorded for a sensitive resource.
var contentKeys = map[string]bool{"output": true, "content": true, "contents": true, "stdout": true, "stderr": true}

// Event redacts ev in place for the resource with secrets s; with an
// inactive s, ev is left as it is. Every part of an event that can carry a
// secret is covered:
//
//   - properties: the strings of content-bearing properties (those
//     protocol.VisibleProperty does not name), of secret properties and
//     any string holding a secret become markers, in a copy of the same
//     type (typed properties stay typed);
//   - diff: contents and content-bearing changes (protocol.Diff.Redact),
//     and changes of secret properties or holding a secret;
//   - status: output and content, and any value holding a secret;
//   - health checks: every message, and a name or command holding a
//     secret;
//   - errors and the noop message: withheld when they hold a secret (the
//     errors themselves are built redacted, see Error).
//
// Event is idempotent: an event redacted once passes again unchanged.
func Event(ev *protocol.TransactionEvent, s *Secrets) {
	if ev == nil || !s.Active() {
		return
	}
	if ev.Properties != nil {
		ev.Properties = properties(ev.Properties, s)
	}
	if ev.Diff != nil {
		d := *ev.Diff
		d.Files = append([]protocol.FileDiff(nil), d.Files...)
		d.Changes = append([]protocol.Change(nil), d.Changes...)
		d.Redact()
		for i, c := range d.Changes {
			if s.SecretProperty(c.Field) || s.Holds(c.From) || s.Holds(c.To) {
				d.Changes[i].From, d.Changes[i].To = markIfSet(c.From), markIfSet(c.To)
			}
		}
		ev.Diff = &d
	}
	if ev.Status != nil {
		ev.Status = state(ev.Status, s)
	}
	for i, hc := range ev.HealthChecks {
		if hc == nil {
			continue
		}
		c := *hc
		c.Message = s.Output(c.Message)
		c.Name, c.Command = s.Value("", c.Name), s.Value("", c.Command)
		ev.HealthChecks[i] = &c
	}
	for i, e := range ev.Errors {
		if s.Holds(e) {
			ev.Errors[i] = s.Withheld()
		}
	}
	if s.Holds(ev.NoopMessage) {
		ev.NoopMessage = Marker
	}
}

// Reply redacts every event of r by what the event itself says: the
// events of sensitive resources (see EventSecrets). It is the last step
// before a reply is encoded, whatever built its events.
func Reply(r *protocol.FleetReply) {
	if r == nil {
		return
	}
	for _, ev := range r.Events {
		Event(ev, EventSecrets(ev))
	}
}

// EventSecrets returns the Secrets an event shows by itself: active when
// its properties say the resource is sensitive. No particular secret value
// is known from an event alone; the engine, which knows them, redacts with
// the resource's full Secrets first.
func EventSecrets(ev *protocol.TransactionEvent) *Secrets {
	if ev == nil || !sensitiveProperties(ev.Properties) {
		return nil
	}
	return Sensitively(ev.ResourceID())
}

// common is what typed properties have: the properties every type shares.
type common interface {
	Common() *resources.CommonProperties
}

// sensitiveProperties reports whether recorded properties say sensitive.
func sensitiveProperties(p any) bool {
	switch t := p.(type) {
	case map[string]any:
		s, _ := t["sensitive"].(bool)
		return s
	case common:
		v := reflect.ValueOf(t)
		return !(v.Kind() == reflect.Pointer && v.IsNil()) && t.Common().Sensitive
	case json.RawMessage:
		var doc struct {
			Sensitive bool `json:"sensitive"`
		}
		return json.Unmarshal(t, &doc) == nil && doc.Sensitive
	}
	return false
}

// properties returns a copy of the recorded properties p of a sensitive
// resource, of the same type, marked sensitive, with every secret
// replaced: by the top-level property a string is under, the name and
// alias stay, the strings of a secret property become Marker, those of a
// property that is not visible (protocol.VisibleProperty)
// protocol.SensitiveValue, and any other string holding a secret is
// replaced. Numbers and booleans are kept: they hold no secret. Typed
// properties (the engine's) stay typed; properties passed on as JSON are
// read as a map first; any other shape keeps only the mark.
func properties(p any, s *Secrets) any {
	if raw, ok := p.(json.RawMessage); ok {
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil {
			m = nil
		}
		p = m
	}
	marked := map[string]any{"sensitive": true}
	v := reflect.ValueOf(p)
	if (v.Kind() != reflect.Pointer && v.Kind() != reflect.Map) || v.IsNil() {
		return marked
	}
	out := rewrite(v, func(top, _, v string) string {
		switch {
		case top == "name" || top == "alias" || top == "sensitive" || v == "":
			return v
		case s.SecretProperty(top):
			return Marker
		case !protocol.VisibleProperty(top):
			return protocol.SensitiveValue
		}
		return s.Value("", v)
	}).Interface()
	switch t := out.(type) {
	case common:
		t.Common().Sensitive = true
	case map[string]any:
		t["sensitive"] = true
	default:
		return marked
	}
	return out
}

// state returns a copy of st, of the same type, with its content and every
// secret value replaced: the strings under a content key or a key named
// like a secret property become Marker, any other string holding a secret
// is replaced.
func state(st protocol.State, s *Secrets) protocol.State {
	out, ok := rewrite(reflect.ValueOf(st), func(_, near, v string) string {
		if v != "" && (contentKeys[near] || s.SecretProperty(near)) {
			return Marker
		}
		return s.Value("", v)
	}).Interface().(protocol.State)
	if !ok {
		return nil
	}
	return out
}

func markIfSet(v string) string {
	if v == "" {
		return ""
	}
	return Marker
}
