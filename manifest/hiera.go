package manifest

import (
	"fmt"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// DefaultOrder is the hierarchy order used when a document gives none: the
// override named "default", as in CCM.
var DefaultOrder = []string{"default"}

// Hiera is hierarchical data: base data, a hierarchy (order and merge) and
// overrides keyed by resolved order entries, plus the validation rules of
// the data's annotations. Manifests hold one; ParseHiera reads a document
// that is only that (a CCM hiera file, ./.hiera). A Hiera is not changed by
// Resolve and may be used concurrently.
type Hiera struct {
	// Data is the base data.
	Data map[string]any
	// Order is the hierarchy; empty means DefaultOrder.
	Order []string
	// Merge is MergeFirst ("" too) or MergeDeep.
	Merge string
	// Overrides are keyed by resolved order entries.
	Overrides map[string]map[string]any
	// Rules are the @require and @validate annotations of the data.
	Rules []Rule
	// Warnings name annotations that were not understood (a misspelt
	// @requiire); they are not errors.
	Warnings []string
	// Unrecognized are those annotations, as CCM logs them.
	Unrecognized []AnnotationWarning
}

// HieraResult is resolved data.
type HieraResult struct {
	// Data is the resolved data.
	Data map[string]any
	// Applied are the override keys merged in, in the order they were
	// merged (with merge: deep the last one wins; with merge: first there is
	// at most one).
	Applied []string
}

// hieraKeys are the top-level keys of a standalone hiera document.
var hieraKeys = []string{"data", "hierarchy", "overrides"}

// ParseHiera strictly decodes a YAML or JSON hiera document (data,
// hierarchy, overrides; any other key is an error), at most DefaultMaxBytes,
// and reads the @require/@validate annotations of a YAML document's data.
// Errors wrap resources.ErrInvalid.
func ParseHiera(b []byte) (*Hiera, error) {
	var top map[string]any
	if _, err := protocol.DecodeStrict(b, &top, protocol.Limits{MaxBytes: DefaultMaxBytes}); err != nil {
		return nil, invalidWith(err, "hiera: %s", decodeMessage(err))
	}
	if top == nil {
		return nil, invalidf("hiera: the document must be an object with data, hierarchy and overrides")
	}
	if err := onlyKeys(top, hieraKeys, "hiera"); err != nil {
		return nil, err
	}
	m := &Manifest{merge: MergeFirst}
	var err error
	if m.data, err = objectOrNil(top["data"], "data"); err != nil {
		return nil, err
	}
	if err := m.decodeHierarchy(top["hierarchy"]); err != nil {
		return nil, err
	}
	if err := m.decodeOverrides(top["overrides"]); err != nil {
		return nil, err
	}
	if m.rules, m.ruleWarnings, err = parseAnnotations(b); err != nil {
		return nil, err
	}
	return m.Hiera(), nil
}

// Hiera returns the manifest's hierarchical data (shared, not copied: do not
// change it).
func (m *Manifest) Hiera() *Hiera {
	var ws []string
	if len(m.ruleWarnings) > 0 {
		ws = make([]string, len(m.ruleWarnings))
	}
	for i, w := range m.ruleWarnings {
		ws[i] = w.String()
	}
	return &Hiera{Data: m.data, Order: m.order, Merge: m.merge, Overrides: m.overrides, Rules: m.rules, Warnings: ws, Unrecognized: m.ruleWarnings}
}

// AnnotationWarnings are the annotations of the manifest's data that were
// not understood (see AnnotationWarning), in document order.
func (m *Manifest) AnnotationWarnings() []AnnotationWarning { return m.ruleWarnings }

// Resolve resolves the data for facts, as CCM does:
//
//   - Every string in the base data and in a selected override is a
//     template over the facts (a string that is one template keeps its
//     value's type); a fact that does not exist reads as "".
//   - Each order entry is a template over the facts. An entry matches when
//     it has no template, or when at least one of its templates gives
//     something other than "" (a missing fact gives ""), and the override
//     its text names exists.
//   - merge: first (the default) takes the first matching override only; its
//     top-level keys replace the base's whole. merge: deep merges every
//     matching override, in order, into the base: later entries win, maps
//     merge key by key, lists concatenate (earlier items first).
//
// Validation rules are not checked here (see ResolveWith).
func (h *Hiera) Resolve(facts map[string]any) (*HieraResult, error) {
	env := templates.New(facts, nil, templates.WithMissingEmpty())
	base, err := expandData(h.Data, env, "data")
	if err != nil {
		return nil, err
	}
	order := h.Order
	if len(order) == 0 {
		order = DefaultOrder
	}
	res := &HieraResult{}
	for i, entry := range order {
		key, matched, err := env.ExpandMatch(entry)
		if err != nil {
			return nil, invalidWith(err, "hierarchy.order[%d] %q: %v", i, entry, err)
		}
		if !matched {
			continue
		}
		ov := h.Overrides[key]
		if ov == nil || key == "data" && h.Data != nil {
			// CCM never takes an override named "data" when there is base
			// data.
			continue
		}
		cand, err := expandData(ov, env, fmt.Sprintf("overrides[%q]", key))
		if err != nil {
			return nil, err
		}
		res.Applied = append(res.Applied, key)
		if h.Merge == MergeDeep {
			base = DeepMerge(base, cand)
			continue
		}
		for k, v := range cand {
			base[k] = v
		}
		break
	}
	res.Data = base
	return res, nil
}

// ResolveWith is Resolve followed by extra deep-merged over the result
// (RunOptions.Data, --data FILE) and then the validation rules checked
// against the final data; a failed rule is an error wrapping
// ErrValidation and resources.ErrInvalid that names every failed key.
func (h *Hiera) ResolveWith(facts, extra map[string]any) (*HieraResult, error) {
	res, err := h.Resolve(facts)
	if err != nil {
		return nil, err
	}
	if len(extra) > 0 {
		res.Data = DeepMerge(res.Data, extra)
	}
	if err := Validate(res.Data, h.Rules); err != nil {
		return nil, err
	}
	return res, nil
}

// expandData expands the templates in every string of data (a copy).
func expandData(data map[string]any, env *templates.Env, where string) (map[string]any, error) {
	out := make(map[string]any, len(data))
	for k, v := range data {
		ev, err := expandDataValue(v, env)
		if err != nil {
			return nil, invalidWith(err, "%s.%s: %v", where, k, err)
		}
		out[k] = ev
	}
	return out, nil
}

func expandDataValue(v any, env *templates.Env) (any, error) {
	switch t := v.(type) {
	case string:
		if !templates.HasTemplate(t) {
			return t, nil
		}
		return env.ExpandTyped(t)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			ev, err := expandDataValue(x, env)
			if err != nil {
				return nil, err
			}
			out[k] = ev
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			ev, err := expandDataValue(x, env)
			if err != nil {
				return nil, err
			}
			out[i] = ev
		}
		return out, nil
	default:
		return v, nil
	}
}
