package manifest

import (
	"github.com/ccm-fleet/ccm/resources/templates"
)

// resolveData computes the data templates see: the base data with the
// overrides the hierarchy selects for these facts merged in (see doc.go), and
// extra merged deep over the result. It also returns the override keys that
// matched, highest priority first.
func (m *Manifest) resolveData(facts, extra map[string]any) (map[string]any, []string, error) {
	data := cloneMap(m.data)
	var matched []string
	if len(m.order) > 0 {
		env := templates.New(facts, nil)
		seen := map[string]bool{}
		for i, tmpl := range m.order {
			key, err := env.ExpandString(tmpl)
			if err != nil {
				return nil, nil, invalidWith(err, "hierarchy.order[%d] %q: %v", i, tmpl, err)
			}
			if key == "" || seen[key] {
				continue
			}
			if _, ok := m.overrides[key]; !ok {
				continue
			}
			seen[key] = true
			matched = append(matched, key)
		}
		// Lowest priority first, so higher-priority overrides land last.
		for i := len(matched) - 1; i >= 0; i-- {
			ov := m.overrides[matched[i]]
			if m.merge == MergeDeep {
				data = DeepMerge(data, ov)
				continue
			}
			for k, v := range ov {
				data[k] = cloneValue(v)
			}
		}
	}
	if len(extra) > 0 {
		data = DeepMerge(data, extra)
	}
	return data, matched, nil
}

// DeepMerge returns a new map: dst with src merged over it. Maps present in
// both merge key by key, lists present in both concatenate (dst's items
// first), any other value from src replaces dst's. Neither input changes.
func DeepMerge(dst, src map[string]any) map[string]any {
	out := cloneMap(dst)
	for k, sv := range src {
		dv, ok := out[k]
		if !ok {
			out[k] = cloneValue(sv)
			continue
		}
		switch s := sv.(type) {
		case map[string]any:
			if d, ok := dv.(map[string]any); ok {
				out[k] = DeepMerge(d, s)
				continue
			}
		case []any:
			if d, ok := dv.([]any); ok {
				joined := make([]any, 0, len(d)+len(s))
				joined = append(joined, d...)
				for _, v := range s {
					joined = append(joined, cloneValue(v))
				}
				out[k] = joined
				continue
			}
		}
		out[k] = cloneValue(sv)
	}
	return out
}

// cloneMap deep-copies decoded JSON; nil becomes an empty map.
func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return cloneMap(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = cloneValue(e)
		}
		return out
	default:
		return v
	}
}
