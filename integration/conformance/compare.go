package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Diff lists how ours differs from CCM's observations of the same case,
// run by run; empty when they agree on everything compared (exit code,
// resource outcomes and noop messages, watched files, document).
func Diff(ccm, ours []Observation) []string {
	var out []string
	if len(ccm) != len(ours) {
		return []string{fmt.Sprintf("CCM has %d runs recorded, ccm-agent ran %d", len(ccm), len(ours))}
	}
	for i := range ccm {
		c, o := ccm[i], ours[i]
		run := fmt.Sprintf("run %d: ", i+1)
		if c.Exit != o.Exit {
			out = append(out, fmt.Sprintf("%sexit %d, CCM %d", run, o.Exit, c.Exit))
		}
		if !reflect.DeepEqual(c.Results, o.Results) {
			out = append(out, fmt.Sprintf("%sresources %s, CCM %s", run, results2s(o.Results), results2s(c.Results)))
		}
		if !reflect.DeepEqual(c.Files, o.Files) {
			out = append(out, fmt.Sprintf("%sfiles %v, CCM %v", run, o.Files, c.Files))
		}
		if !sameJSON(c.Document, o.Document) {
			out = append(out, fmt.Sprintf("%sdocument %s, CCM %s", run, o.Document, c.Document))
		}
	}
	return out
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
