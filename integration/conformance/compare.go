package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Aspects of an observation that are compared.
const (
	AspectExit     = "exit"
	AspectResults  = "results"
	AspectFiles    = "files"
	AspectDocument = "document"
)

// Difference is one way ours differs from CCM's observation of a run.
type Difference struct {
	Run    int
	Aspect string
	Text   string
}

func (d Difference) String() string { return fmt.Sprintf("run %d: %s: %s", d.Run, d.Aspect, d.Text) }

// Diff lists how ours differs from CCM's observations of the same case,
// run by run; empty when they agree on everything compared: the exit code,
// the resources' outcomes and noop messages, the watched files and the
// document. A noop message of ours agrees when it is CCM's sentence
// followed by ": " and what differs (a documented difference: see
// NoopDetailRow).
func Diff(ccm, ours []Observation) []Difference {
	if len(ccm) != len(ours) {
		return []Difference{{Aspect: "runs", Text: fmt.Sprintf("CCM has %d runs recorded, ccm-agent ran %d", len(ccm), len(ours))}}
	}
	var out []Difference
	for i := range ccm {
		c, o := ccm[i], ours[i]
		add := func(aspect, format string, args ...any) {
			out = append(out, Difference{Run: i + 1, Aspect: aspect, Text: fmt.Sprintf(format, args...)})
		}
		if c.Exit != o.Exit {
			add(AspectExit, "%d, CCM %d", o.Exit, c.Exit)
		}
		if !sameResults(c.Results, o.Results) {
			add(AspectResults, "%s, CCM %s", results2s(o.Results), results2s(c.Results))
		}
		if !reflect.DeepEqual(c.Files, o.Files) {
			add(AspectFiles, "%v, CCM %v", o.Files, c.Files)
		}
		if !sameJSON(c.Document, o.Document) {
			add(AspectDocument, "%s, CCM %s", o.Document, c.Document)
		}
	}
	return out
}

// NoopDetailRow is the row of docs/coming-from-ccm.md that says ccm-agent's
// noop messages carry what differs after CCM's sentence.
const NoopDetailRow = "A noop message is followed by what differs"

func sameResults(ccm, ours []Result) bool {
	if len(ccm) != len(ours) {
		return false
	}
	for i := range ccm {
		c, o := ccm[i], ours[i]
		if c.Ref != o.Ref || c.Outcome != o.Outcome {
			return false
		}
		if c.Noop != o.Noop && !strings.HasPrefix(o.Noop, c.Noop+": ") {
			return false
		}
	}
	return true
}

// sameJSON reports whether two documents hold the same value, however
// they are laid out.
func sameJSON(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y bytes.Buffer
	if json.Compact(&x, a) != nil || json.Compact(&y, b) != nil {
		return false
	}
	return bytes.Equal(x.Bytes(), y.Bytes())
}

func results2s(rs []Result) string {
	var parts []string
	for _, r := range rs {
		s := r.Ref + " " + r.Outcome
		if r.Noop != "" {
			s += " (" + r.Noop + ")"
		}
		parts = append(parts, s)
	}
	return "[" + strings.Join(parts, "; ") + "]"
}
