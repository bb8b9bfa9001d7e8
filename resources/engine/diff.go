package engine

import (
	"encoding/json"
	"sort"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
)

// SensitiveValue replaces the value of a content-bearing property of a
// sensitive resource in events.
const SensitiveValue = "[sensitive]"

// visibleProperties are the properties of a sensitive resource that events
// still show: they name the resource and its attributes, never its content.
var visibleProperties = map[string]bool{
	"name": true, "alias": true, "ensure": true, "provider": true,
	"require": true, "subscribe": true, "control": true, "sensitive": true,
	"owner": true, "group": true, "mode": true, "force": true, "purge": true,
	"enable": true,
}

// eventProperties returns the properties an event records: the type's
// redacted copy when it holds credentials (Redactor), and for a sensitive
// resource only the properties in visibleProperties, every other value
// replaced by SensitiveValue.
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
	for k, val := range m {
		if !visibleProperties[k] && val != nil && val != "" {
			m[k] = SensitiveValue
		}
	}
	return m
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
