package engine

import (
	"sort"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
)

// SensitiveValue replaces the value of a content-bearing property of a
// sensitive resource in events.
const SensitiveValue = protocol.SensitiveValue

// eventProperties returns the properties an event records: the type's
// redacted copy when it holds credentials (Redactor). A sensitive
// resource's are redacted with the rest of its event (redact.Event).
func eventProperties(p resources.Properties) any {
	if r, ok := p.(Redactor); ok {
		return r.Redacted()
	}
	return p
}

// eventDiff caps the diff of an outcome for an event; nil when it says
// nothing. A sensitive resource's diff is redacted with the rest of its
// event (redact.Event).
func eventDiff(d *protocol.Diff) *protocol.Diff {
	if d.Empty() {
		return nil
	}
	c := *d
	c.Files = append([]protocol.FileDiff(nil), d.Files...)
	c.Changes = append([]protocol.Change(nil), d.Changes...)
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
