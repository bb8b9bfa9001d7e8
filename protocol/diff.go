package protocol

import "strings"

// Diff limits and texts shared by agents and clients.
const (
	// DiffSensitive replaces the content of a sensitive resource in a diff.
	DiffSensitive = "content differs; sensitive"
	// MaxDiffBytes bounds the text of one content diff in an event (and so
	// in history); a longer diff is cut at a line end and Truncated is set.
	MaxDiffBytes = 16 << 10
	// MaxDiffFiles bounds the per-file diffs, added and purged lists of one
	// event; the rest are counted in Omitted.
	MaxDiffFiles = 100
)

// Diff is how a resource differs from its desired state: what a noop run
// would change, or what a real run changed. It is carried in a
// transaction event's "diff" field, absent when nothing differs.
type Diff struct {
	// Changes are attributes going from one value to another: mode, owner,
	// group, ensure, version, state, enabled, checksum, download, ...
	Changes []Change `json:"changes,omitempty"`
	// Content is the unified diff (3 lines of context) of the current
	// content ("---") against the desired one ("+++").
	Content string `json:"content,omitempty"`
	// Summary stands in for Content when the content cannot be shown: binary,
	// larger than the agent's cap, or sensitive (DiffSensitive).
	Summary string `json:"summary,omitempty"`
	// Sensitive is set when the resource is sensitive: no content, no value
	// of a content-bearing property is in the diff.
	Sensitive bool `json:"sensitive,omitempty"`
	// Truncated is set when Content was cut at MaxDiffBytes.
	Truncated bool `json:"truncated,omitempty"`
	// Files are per-file diffs of a resource managing several files
	// (scaffold), sorted by path.
	Files []FileDiff `json:"files,omitempty"`
	// Added and Purged list files a resource creates or removes (scaffold).
	Added  []string `json:"added,omitempty"`
	Purged []string `json:"purged,omitempty"`
	// Omitted counts files left out of Files, Added and Purged beyond
	// MaxDiffFiles.
	Omitted int `json:"omitted,omitempty"`
}

// Change is one attribute going from one value to another; From is empty
// when the attribute did not exist.
type Change struct {
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// FileDiff is the diff of one file of a resource managing several.
type FileDiff struct {
	Path      string `json:"path"`
	Content   string `json:"content,omitempty"`
	Summary   string `json:"summary,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

// Empty reports whether d says nothing.
func (d *Diff) Empty() bool {
	return d == nil || len(d.Changes) == 0 && d.Content == "" && d.Summary == "" &&
		len(d.Files) == 0 && len(d.Added) == 0 && len(d.Purged) == 0 && d.Omitted == 0
}

// Redact removes every content from d and marks it sensitive: contents
// become DiffSensitive, file names stay, and the values of changes other
// than mode, owner, group, ensure, state, enabled and version become
// "[sensitive]".
func (d *Diff) Redact() {
	if d == nil {
		return
	}
	had := d.Content != "" || d.Summary != "" || len(d.Files) > 0
	d.Content, d.Truncated, d.Sensitive = "", false, true
	d.Summary = ""
	if had {
		d.Summary = DiffSensitive
	}
	for i := range d.Files {
		d.Files[i] = FileDiff{Path: d.Files[i].Path, Summary: DiffSensitive}
	}
	for i, c := range d.Changes {
		switch c.Field {
		case "mode", "owner", "group", "ensure", "state", "enabled", "version":
		default:
			d.Changes[i].From, d.Changes[i].To = redactedValue(c.From), redactedValue(c.To)
		}
	}
}

func redactedValue(s string) string {
	if s == "" {
		return ""
	}
	return "[sensitive]"
}

// CapText cuts s to at most limit bytes at a line end, reporting whether it
// cut.
func CapText(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	cut := s[:limit]
	if i := strings.LastIndexByte(cut, '\n'); i >= 0 {
		cut = cut[:i+1]
	}
	return cut, true
}

// SensitiveValue replaces the value of a content-bearing property of a
// sensitive resource wherever its properties are recorded.
const SensitiveValue = "[sensitive]"

// visibleProperties are the properties of a sensitive resource still
// recorded as they are: they name the resource and its attributes, never
// its content.
var visibleProperties = map[string]bool{
	"name": true, "alias": true, "ensure": true, "provider": true,
	"require": true, "subscribe": true, "control": true, "sensitive": true,
	"owner": true, "group": true, "mode": true, "force": true, "purge": true,
	"enable": true,
}

// VisibleProperty reports whether the property named key of a sensitive
// resource is recorded as it is (see RedactSensitive).
func VisibleProperty(key string) bool { return visibleProperties[key] }

// RedactSensitive returns props unchanged unless they set sensitive to
// true; then a copy in which every property but the resource's name and
// attributes (name, alias, ensure, provider, require, subscribe, control,
// sensitive, owner, group, mode, force, purge, enable) that has a value is
// SensitiveValue.
func RedactSensitive(props map[string]any) map[string]any {
	if s, _ := props["sensitive"].(bool); !s {
		return props
	}
	out := make(map[string]any, len(props))
	for k, v := range props {
		if !visibleProperties[k] && v != nil && v != "" {
			v = SensitiveValue
		}
		out[k] = v
	}
	return out
}

// MaxReplyDiffBytes bounds the diff text of all the events of one reply
// together (and so of its history record): past it, later content diffs
// are left out with a summary saying so.
const MaxReplyDiffBytes = 256 << 10

// DiffLeftOut is the summary of a content diff left out of a reply whose
// diffs already reached MaxReplyDiffBytes.
const DiffLeftOut = "content differs (diff left out: the reply's diffs reached their size limit)"

// CapDiffs keeps the content diffs of r's events within budget bytes in
// event order; a diff past it keeps its changes and file lists but its
// content becomes DiffLeftOut.
func (r *FleetReply) CapDiffs(budget int) {
	for _, ev := range r.Events {
		if ev == nil || ev.Diff == nil {
			continue
		}
		d := ev.Diff
		if n := len(d.Content); n > 0 {
			if n > budget {
				d.Content, d.Summary, d.Truncated = "", DiffLeftOut, false
			} else {
				budget -= n
			}
		}
		for i := range d.Files {
			f := &d.Files[i]
			if n := len(f.Content); n > 0 {
				if n > budget {
					f.Content, f.Summary, f.Truncated = "", DiffLeftOut, false
				} else {
					budget -= n
				}
			}
		}
	}
}
