package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// DefaultMaxBytes bounds a manifest document when ParseOptions.MaxBytes is 0.
const DefaultMaxBytes = 1 << 20

// Hierarchy merge strategies.
const (
	// MergeFirst takes the first matching override only; its top-level
	// keys replace the base data's.
	MergeFirst = "first"
	// MergeDeep merges every matching override into the base data in order,
	// later ones winning: maps merge key by key, lists concatenate, other
	// values are replaced.
	MergeDeep = "deep"
)

// Manifest is a parsed manifest document: data, hierarchy, overrides and
// the ordered resource entries. It is immutable once parsed and safe to run
// many times, also concurrently.
type Manifest struct {
	workingDir  string
	doc         json.RawMessage
	data        map[string]any
	order       []string
	merge       string
	overrides   map[string]map[string]any
	failOnError bool
	preMessage  string
	postMessage string
	entries     []*entry
	// sensitiveData are the data keys marked sensitive (sensitive_data).
	sensitiveData []string
	// jetFile is ccm.resources_jet_file: a Jet template in the manifest's
	// directory rendering the resources once data is resolved.
	jetFile string
	// types are the resource types entries may have.
	types typeSet
	// rules are the data's @require/@validate annotations; ruleWarnings
	// name the annotations not understood.
	rules        []Rule
	ruleWarnings []AnnotationWarning
}

// ParseOptions bound parsing.
type ParseOptions struct {
	// WorkingDir resolves relative source: paths (file, scaffold); "" = none.
	WorkingDir string
	// Source names the document in its decoding errors (Load gives the
	// file's path: `manifest site.yaml: invalid YAML at line 7, ...`);
	// "" names none.
	Source string
	// MaxBytes bounds the document (default 1 MiB).
	MaxBytes int
	// Types are the resource types whose properties are accepted; empty
	// means BuiltinTypes.
	Types []resources.Type
}

// Load reads and parses a manifest file; WorkingDir is the file's
// directory. It decodes with the rules of Parse: YAML anchors and aliases
// are refused in files too.
func Load(path string) (*Manifest, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", path, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", path, err)
	}
	if fi.Size() > DefaultMaxBytes {
		return nil, documentError(nil, "manifest %s: %d bytes, the limit is %d", path, fi.Size(), DefaultMaxBytes)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", path, err)
	}
	return Parse(data, ParseOptions{WorkingDir: filepath.Dir(abs), Source: path})
}

// decodeMessage renders a decoding error for a manifest author: the key
// path as written and the problem (`data.ports: key "80" appears twice`).
func decodeMessage(err error) string {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe.KeyMessage()
	}
	return err.Error()
}

// Parse strictly decodes a YAML or JSON manifest. Unknown keys anywhere are
// errors naming the key and the resource (e.g. `resources[2] file#/etc/motd:
// unknown property "colour"`); every error wraps resources.ErrInvalid.
func Parse(data []byte, opts ParseOptions) (*Manifest, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	label := "manifest"
	if opts.Source != "" {
		label += " " + opts.Source
	}
	var top map[string]any
	if _, err := protocol.DecodeStrict(data, &top, protocol.Limits{MaxBytes: opts.MaxBytes}); err != nil {
		return nil, documentError(err, "%s: %s", label, decodeMessage(err))
	}
	if top == nil {
		return nil, documentError(nil, "%s: the document must be an object with data, hierarchy, overrides and ccm", label)
	}
	doc, err := json.Marshal(top)
	if err != nil {
		return nil, documentError(err, "manifest: %v", err)
	}
	m := &Manifest{workingDir: opts.WorkingDir, doc: doc, merge: MergeFirst}
	if err := m.decodeTop(top, newTypeSet(opts.Types)); err != nil {
		return nil, err
	}
	commented, warnings, err := parseAnnotations(data)
	if err != nil {
		return nil, err
	}
	m.ruleWarnings = warnings
	if len(commented) > 0 {
		// The annotations travel in the JSON document (bundles carry JSON,
		// which has no comments) as data_rules.
		m.rules = mergeRules(m.rules, commented)
		top["data_rules"] = encodeRules(m.rules)
		if m.doc, err = json.Marshal(top); err != nil {
			return nil, invalidWith(err, "manifest: %v", err)
		}
	}
	return m, nil
}

// WorkingDir returns the directory relative sources resolve against ("" when
// none).
func (m *Manifest) WorkingDir() string { return m.workingDir }

// Document returns the manifest as a JSON object (YAML input converted).
func (m *Manifest) Document() json.RawMessage { return append(json.RawMessage(nil), m.doc...) }

// InDir returns a copy of m whose relative sources resolve against dir
// (where a bundle's files were written); m itself is unchanged.
func (m *Manifest) InDir(dir string) *Manifest {
	c := *m
	c.workingDir = dir
	return &c
}

// FailOnError reports whether the run stops after the first failed resource.
func (m *Manifest) FailOnError() bool { return m.failOnError }

var (
	topKeys       = []string{"data", "sensitive_data", "data_rules", "hierarchy", "overrides", "ccm"}
	hierarchyKeys = []string{"order", "merge"}
	ccmKeys       = []string{"fail_on_error", "pre_message", "post_message", "resources", "resources_jet_file"}
)

func (m *Manifest) decodeTop(top map[string]any, ts typeSet) error {
	if err := onlyKeys(top, topKeys, "manifest"); err != nil {
		return err
	}
	var err error
	if m.data, err = objectOrNil(top["data"], "data"); err != nil {
		return err
	}
	if m.sensitiveData, err = decodeSensitiveData(top["sensitive_data"]); err != nil {
		return err
	}
	if m.rules, err = decodeRules(top["data_rules"]); err != nil {
		return err
	}
	if err := m.decodeHierarchy(top["hierarchy"]); err != nil {
		return err
	}
	if err := m.decodeOverrides(top["overrides"]); err != nil {
		return err
	}
	return m.decodeCCM(top["ccm"], ts)
}

// maxSensitiveData bounds the sensitive_data list.
const maxSensitiveData = 256

// decodeSensitiveData reads sensitive_data: a list of dotted data keys
// ("db.password", or "data.db.password"), each a path of non-empty
// segments.
func decodeSensitiveData(v any) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, invalidf("sensitive_data: expected a list of data keys, got %s", kind(v))
	}
	if len(list) > maxSensitiveData {
		return nil, invalidf("sensitive_data: %d keys, the limit is %d", len(list), maxSensitiveData)
	}
	out := make([]string, 0, len(list))
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, invalidf("sensitive_data[%d]: expected a data key, got %s", i, kind(e))
		}
		key := strings.TrimPrefix(s, "data.")
		if key == "" || len(key) > 1024 || slices.Contains(strings.Split(key, "."), "") || strings.ContainsAny(key, " \t\n{}") {
			return nil, invalidf("sensitive_data[%d]: %q is not a dotted data key such as db.password", i, s)
		}
		out = append(out, key)
	}
	return out, nil
}

// SensitiveData returns the data keys the manifest marks sensitive.
func (m *Manifest) SensitiveData() []string { return m.sensitiveData }

func (m *Manifest) decodeHierarchy(v any) error {
	h, err := objectOrNil(v, "hierarchy")
	if err != nil || h == nil {
		return err
	}
	if err := onlyKeys(h, hierarchyKeys, "hierarchy"); err != nil {
		return err
	}
	if o, ok := h["order"]; ok && o != nil {
		list, ok := o.([]any)
		if !ok {
			return invalidf("hierarchy.order: expected a list of strings, got %s", kind(o))
		}
		for i, e := range list {
			s, ok := e.(string)
			if !ok {
				return invalidf("hierarchy.order[%d]: expected a string, got %s", i, kind(e))
			}
			m.order = append(m.order, s)
		}
	}
	if mv, ok := h["merge"]; ok && mv != nil {
		s, _ := mv.(string)
		if s != MergeFirst && s != MergeDeep {
			return invalidf("hierarchy.merge: %v is not %q or %q", mv, MergeFirst, MergeDeep)
		}
		m.merge = s
	}
	return nil
}

func (m *Manifest) decodeOverrides(v any) error {
	o, err := objectOrNil(v, "overrides")
	if err != nil || o == nil {
		return err
	}
	m.overrides = make(map[string]map[string]any, len(o))
	for _, k := range sortedKeys(o) {
		ov, err := objectOrNil(o[k], fmt.Sprintf("overrides[%q]", k))
		if err != nil {
			return err
		}
		m.overrides[k] = ov
	}
	return nil
}

func (m *Manifest) decodeCCM(v any, ts typeSet) error {
	c, err := objectOrNil(v, "ccm")
	if err != nil || c == nil {
		return err
	}
	if err := onlyKeys(c, ccmKeys, "ccm"); err != nil {
		return err
	}
	if f, ok := c["fail_on_error"]; ok && f != nil {
		b, ok := f.(bool)
		if !ok {
			return invalidf("ccm.fail_on_error: expected true or false, got %s", kind(f))
		}
		m.failOnError = b
	}
	for _, msg := range []struct {
		key string
		dst *string
	}{{"pre_message", &m.preMessage}, {"post_message", &m.postMessage}} {
		if s, ok := c[msg.key]; ok && s != nil {
			str, ok := s.(string)
			if !ok {
				return invalidf("ccm.%s: expected a string, got %s", msg.key, kind(s))
			}
			*msg.dst = str
		}
	}
	m.types = ts
	if err := m.decodeJetFile(c); err != nil {
		return err
	}
	r, ok := c["resources"]
	if !ok || r == nil {
		return nil
	}
	list, ok := r.([]any)
	if !ok {
		return invalidf("ccm.resources: expected a list, got %s", kind(r))
	}
	for i, item := range list {
		es, err := parseItem(i, item, ts)
		if err != nil {
			return err
		}
		for _, e := range es {
			e.decoded = new(decodedCache)
		}
		m.entries = append(m.entries, es...)
	}
	return nil
}

// onlyKeys fails on the first key of obj not in allowed.
func onlyKeys(obj map[string]any, allowed []string, where string) error {
	for _, k := range sortedKeys(obj) {
		if !slices.Contains(allowed, k) {
			return invalidf("%s: unknown key %q (allowed: %s)", where, k, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// objectOrNil returns v as an object; nil (absent or null) is nil.
func objectOrNil(v any, where string) (map[string]any, error) {
	if v == nil {
		return nil, nil
	}
	o, ok := v.(map[string]any)
	if !ok {
		return nil, invalidf("%s: expected an object, got %s", where, kind(v))
	}
	return o, nil
}

// kind names a decoded JSON value's type for messages.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "true or false"
	case float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// Declared is a resource as the manifest declares it: its type and its
// name as written (templates unexpanded).
type Declared struct {
	Type string
	Name string
}

// Declared lists the manifest's resources in declaration order, one per
// name of a name list, names unexpanded.
func (m *Manifest) Declared() []Declared {
	var out []Declared
	for _, e := range m.entries {
		switch n := e.name.(type) {
		case []any:
			for _, x := range n {
				out = append(out, Declared{Type: e.typ, Name: fmt.Sprint(x)})
			}
		default:
			out = append(out, Declared{Type: e.typ, Name: nameText(n)})
		}
	}
	return out
}

// Providers lists, parallel to Declared, the provider each resource asks
// for as written: "" when none, the literal name when it is a plain string,
// and "*" when it cannot be known before templates are expanded (a
// templated provider, or a "*" map that may set one).
func (m *Manifest) Providers() []string {
	var out []string
	for _, e := range m.entries {
		p := entryProvider(e)
		n := 1
		if list, ok := e.name.([]any); ok {
			n = len(list)
		}
		for range n {
			out = append(out, p)
		}
	}
	return out
}

// entryProvider is the provider an entry asks for (see Providers).
func entryProvider(e *entry) string {
	if e.splat != nil || (e.defaults != nil && e.defaults.splat != nil) {
		return "*"
	}
	v, ok := e.props["provider"]
	if !ok && e.defaults != nil {
		v, ok = e.defaults.props["provider"]
	}
	if !ok || v == nil {
		return ""
	}
	s, isString := v.(string)
	if !isString || templates.HasTemplate(s) {
		return "*"
	}
	return s
}

// Unexpanded is a resource as the manifest declares it, before data,
// facts and templates: what can be checked without a host.
type Unexpanded struct {
	// Label names it in messages: resources[2] file#/etc/motd.
	Label string
	// Type is the resource type.
	Type string
	// Properties are its list's defaults overlaid with its own
	// properties, "name" set to the name as written (one Unexpanded per
	// name of a name list); templates are unexpanded.
	Properties map[string]any
	// Splat is the "*" values (its own, then its defaults'), each an
	// object or a template giving one; when any is set, properties may be
	// added that cannot be known before templates are expanded.
	Splat []any
}

// Unexpanded lists the manifest's resources in declaration order, one per
// name of a name list (a templated name list counts as one).
func (m *Manifest) Unexpanded() []Unexpanded {
	var out []Unexpanded
	for _, e := range m.entries {
		base := map[string]any{}
		var splat []any
		if e.splat != nil {
			splat = append(splat, e.splat)
		}
		if e.defaults != nil {
			base = cloneMap(e.defaults.props)
			if e.defaults.splat != nil {
				splat = append(splat, e.defaults.splat)
			}
		}
		for k, v := range e.props {
			base[k] = cloneValue(v)
		}
		names := []any{e.name}
		if list, ok := e.name.([]any); ok {
			names = list
		}
		for _, n := range names {
			props := cloneMap(base)
			props["name"] = n
			out = append(out, Unexpanded{
				Label:      fmt.Sprintf("resources[%d] %s#%s", e.index, e.typ, nameText(n)),
				Type:       e.typ,
				Properties: props,
				Splat:      splat,
			})
		}
	}
	return out
}
