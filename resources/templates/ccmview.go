package templates

import "strings"

// gathered are the fact trees that hold what the facts package gathers
// with gopsutil: below them the Facts variable also answers to the Go field
// names of gopsutil's types, as CCM's do (Facts.host.info.Hostname as well
// as Facts.host.info.hostname).
var gathered = []string{"cpu", "host", "memory", "network", "partition"}

// goNames are the JSON names of gopsutil fields whose Go name is not the
// JSON name with its first letter upper-cased.
var goNames = map[string]string{
	"hostId":       "HostID",
	"os":           "OS",
	"cpu":          "CPU",
	"vendorId":     "VendorID",
	"physicalId":   "PhysicalID",
	"coreId":       "CoreID",
	"mtu":          "MTU",
	"hardwareAddr": "HardwareAddr",
}

// GoName is the name the Facts variable also gives a gathered fact's key:
// the Go field name of the gopsutil type it came from.
func GoName(key string) string {
	if n, ok := goNames[key]; ok {
		return n
	}
	if key == "" || key[0] < 'a' || key[0] > 'z' {
		return key
	}
	return strings.ToUpper(key[:1]) + key[1:]
}

// ccmView returns facts with, below the gathered trees, every map also
// answering to the Go names of its keys (a key already present wins). facts
// itself is not changed; other facts are shared, not copied.
func ccmView(facts map[string]any) map[string]any {
	var out map[string]any
	for _, k := range gathered {
		v, ok := facts[k]
		if !ok {
			continue
		}
		if out == nil {
			out = make(map[string]any, len(facts))
			for fk, fv := range facts {
				out[fk] = fv
			}
		}
		out[k] = aliased(v)
	}
	if out == nil {
		return facts
	}
	return out
}

func aliased(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, 2*len(t))
		for k, x := range t {
			out[k] = aliased(x)
		}
		for k := range t {
			if g := GoName(k); g != k {
				if _, taken := out[g]; !taken {
					out[g] = out[k]
				}
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = aliased(x)
		}
		return out
	default:
		return v
	}
}
