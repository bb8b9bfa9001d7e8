package engine

import (
	"encoding/json"
	"sort"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
)

// SensitiveValue replaces the value of a content-bearing property of a
// sensitive resource in events.
const SensitiveValue = protocol.SensitiveValue

// eventProperties returns the properties an event records: the type's
// redacted copy when it holds credentials (Redactor), and for a sensitive
// resource the copy protocol.RedactSensitive makes.
func eventProperties(p resources.Properties) any {
	var v any = p
	if r, ok := p.(Redactor); ok {
		v = r.Redacted()
	}
	if !p.Common().Sensitive {
		return v
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return map[string]any{"name": p.Common().Name, "sensitive": true}
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return map[string]any{"name": p.Common().Name, "sensitive": true}
	}
	m["sensitive"] = true
	return protocol.RedactSensitive(m)
}

// eventDiff caps the diff of an outcome for an event and redacts it when
// the resource is sensitive; nil when it says nothing.
func eventDiff(d *protocol.Diff, sensitive bool) *protocol.Diff {
	if d.Empty() {
		return nil
	}
	c := *d
	c.Files = append([]protocol.FileDiff(nil), d.Files...)
	c.Changes = append([]protocol.Change(nil), d.Changes...)
	if sensitive {
		c.Redact()
	}
	if cut, ok := protocol.CapText(c.Content, protocol.MaxDiffBytes); ok {
		c.Content, c.Truncated = cut, true
	}
	sort.Slice(c.Files, func(i, j int) bool { return c.Files[i].Path < c.Files[j].Path })
	budget := protocol.MaxDiffBytes
	for i := range c.Files {
		f := &c.Files[i]
		cut, ok := protocol.CapText(f.Content, min(budget, protocol.MaxDiffBytes))
		f.Content, f.Truncated = cut, f.Truncated || ok
		budget = max(0, budget-len(cut))
	}
	omit := func(list []string) []string {
		if len(list) > protocol.MaxDiffFiles {
			c.Omitted += len(list) - protocol.MaxDiffFiles
			return list[:protocol.MaxDiffFiles]
		}
		return list
	}
	if len(c.Files) > protocol.MaxDiffFiles {
		c.Omitted += len(c.Files) - protocol.MaxDiffFiles
		c.Files = c.Files[:protocol.MaxDiffFiles]
	}
	c.Added, c.Purged = omit(c.Added), omit(c.Purged)
	return &c
}
