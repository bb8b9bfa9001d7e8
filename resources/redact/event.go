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
//   - properties: content-bearing values (protocol.RedactSensitive), the
//     values of secret properties and any value holding a secret become
//     markers;
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

// sensitiveProperties reports whether recorded properties say sensitive.
func sensitiveProperties(p any) bool {
	switch t := p.(type) {
	case nil:
		return false
	case map[string]any:
		s, _ := t["sensitive"].(bool)
		return s
	case resources.Properties:
		return t.Common().Sensitive
	}
	m, ok := asMap(p)
	if !ok {
		return false
	}
	s, _ := m["sensitive"].(bool)
	return s
}

// properties returns the recorded properties p of a sensitive resource
// with every secret replaced. Typed properties (the engine's) stay typed:
// a redacted copy, marked sensitive; properties already in their generic
// form (a map, or JSON passed on) are redacted as a map.
func properties(p any, s *Secrets) any {
	if typed, ok := p.(resources.Properties); ok {
		return typedProperties(typed, s)
	}
	m, ok := asMap(p)
	if !ok {
		return map[string]any{"sensitive": true}
	}
	m["sensitive"] = true
	m = protocol.RedactSensitive(m)
	for k, v := range m {
		switch {
		case k == "name" || k == "alias" || k == "sensitive":
		case s.SecretProperty(k) && v != nil && v != "":
			m[k] = Marker
		default:
			m[k] = values(v, s)
		}
	}
	return m
}

// typedProperties is properties for typed properties: a copy in which, by
// the top-level property a string is under, the name and alias stay, the
// strings of a secret property become Marker, those of a property that is
// not visible (protocol.VisibleProperty) protocol.SensitiveValue, as
// protocol.RedactSensitive makes them, and any other string holding a
// secret is replaced. Numbers and booleans are kept: they hold no secret.
func typedProperties(p resources.Properties, s *Secrets) any {
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return map[string]any{"sensitive": true}
	}
	out := rewrite(reflect.ValueOf(p), func(top, _, v string) string {
		switch {
		case top == "name" || top == "alias" || top == "sensitive" || v == "":
			return v
		case s.SecretProperty(top):
			return Marker
		case !protocol.VisibleProperty(top):
			return protocol.SensitiveValue
		}
		return s.Value("", v)
	}).Interface().(resources.Properties)
	out.Common().Sensitive = true
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

// values replaces, below v, every string holding a secret.
func values(v any, s *Secrets) any {
	switch t := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(t))
		for k, x := range t {
			c[k] = values(x, s)
		}
		return c
	case []any:
		c := make([]any, len(t))
		for i, x := range t {
			c[i] = values(x, s)
		}
		return c
	case string:
		return s.Value("", t)
	}
	return v
}

// asMap returns a copy of p as a JSON object.
func asMap(p any) (map[string]any, bool) {
	var raw []byte
	switch t := p.(type) {
	case json.RawMessage:
		raw = t
	case map[string]any:
		c := make(map[string]any, len(t))
		for k, v := range t {
			c[k] = v
		}
		return c, true
	default:
		b, err := json.Marshal(p)
		if err != nil {
			return nil, false
		}
		raw = b
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}

func markIfSet(v string) string {
	if v == "" {
		return ""
	}
	return Marker
}
