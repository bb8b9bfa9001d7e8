package manifest

// resolveData computes the data templates see: the hierarchy resolved as
// CCM does (see Hiera.Resolve), extra merged deep over the result, then the
// validation rules checked. It also returns the override keys applied, in
// the order they were applied.
func (m *Manifest) resolveData(facts, extra map[string]any) (map[string]any, []string, error) {
	res, err := m.Hiera().ResolveWith(facts, extra)
	if err != nil {
		return nil, nil, err
	}
	return res.Data, res.Applied, nil
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
