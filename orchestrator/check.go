package orchestrator

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// controlKey holds control.if and control.unless: conditions, which are
// compiled but never substituted.
const controlKey = "control"

// CheckEnsure validates an ensure request as far as it can be without a
// host's facts, the way every agent would before touching anything, so a
// typo is refused once, locally, instead of by every host. Run calls it
// before discovery; ccm-orch calls it before connecting. It checks, in
// order:
//
//   - the resource type is one ccm knows;
//   - every property name, exactly as written (control's too);
//   - every {{ ... }} template and control condition compiles (syntax only:
//     what a template reads from facts or data is the agents' business);
//   - provider:, unless templated, names a provider of the type;
//   - the property types and the type's own validation (paths, modes,
//     ensure values, ...), with templates stood in for.
//
// Templates are stood in for twice, and a validation failure is reported
// only when both stand-ins fail with the same error, that is when the
// failure does not depend on what the templates expand to: first every
// template becomes "x", then a value that is exactly one template becomes
// null (unset; it may expand to a list or an object) and a template inside
// other text becomes "0". Anything else is left to the agents, which
// expand the templates with their own facts. The error wraps
// resources.ErrInvalid and is one line naming the resource and the problem.
func CheckEnsure(e *protocol.EnsureRequest) error {
	if e == nil {
		return fmt.Errorf("%w: no resource", resources.ErrInvalid)
	}
	t, err := builtinType(e.Type)
	if err != nil {
		return err
	}
	// The agents' own strict decoding: a key twice or invalid UTF-8 is
	// refused here as it would be there.
	props, err := e.PropertiesMap()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", e.Type, resources.ErrInvalid, protocol.AsError(err).Message)
	}
	if props == nil {
		return fmt.Errorf("%s: %w: properties must be a JSON object", e.Type, resources.ErrInvalid)
	}
	label := e.Type
	if n, ok := props["name"].(string); ok && n != "" {
		label = e.Type + "#" + n
	}
	if err := checkProps(t, props); err != nil {
		return fmt.Errorf("%s: %w", label, err)
	}
	return nil
}

// checkProps is CheckEnsure after the type was found and the properties
// decoded.
func checkProps(t resources.Type, props map[string]any) error {
	if parent, key, bad := resources.PropertyKeys(t).Unknown(props); bad {
		if parent != "" {
			key = parent + "." + key
		}
		return fmt.Errorf("%w: unknown property %q", resources.ErrInvalid, key)
	}
	if err := checkTemplatesAndProvider(t, props); err != nil {
		return fmt.Errorf("%w: %w", resources.ErrInvalid, err)
	}
	first, templated := standIn(props, "", false)
	_, errX := engine.Decode(t, first.(map[string]any))
	if errX == nil || !templated {
		return errX
	}
	second, _ := standIn(props, "", true)
	if _, err0 := engine.Decode(t, second.(map[string]any)); sameProblem(err0, errX) {
		return errX
	}
	return nil
}

// sameProblem reports whether a and b are validation failures of the same
// property for the same reason: one that does not depend on what a
// template stands for.
func sameProblem(a, b error) bool {
	var ia, ib *resources.InvalidError
	return errors.As(a, &ia) && errors.As(b, &ib) && ia.Problem == ib.Problem
}

// checkTemplatesAndProvider compiles every template and condition of
// props and checks that a literal provider: is one of the type's.
func checkTemplatesAndProvider(t resources.Type, props map[string]any) error {
	if err := checkTemplates(props, ""); err != nil {
		return err
	}
	if p, ok := props["provider"].(string); ok && p != "" && !templates.HasTemplate(p) {
		known := manifest.BuiltinProviders()[t.Name()]
		if !slices.Contains(known, p) {
			return fmt.Errorf("%w %q for %s (known: %s)", resources.ErrUnknownProvider, p, t.Name(), strings.Join(known, ", "))
		}
	}
	return nil
}

// builtinType finds a type among manifest.BuiltinTypes.
func builtinType(name string) (resources.Type, error) {
	var names []string
	for _, t := range manifest.BuiltinTypes() {
		if t.Name() == name {
			return t, nil
		}
		names = append(names, t.Name())
	}
	slices.Sort(names)
	return nil, fmt.Errorf("%w: %w %q (known: %s)", resources.ErrInvalid, resources.ErrUnknownType, name, strings.Join(names, ", "))
}

// checkTemplates compiles every template under v, and control's
// conditions as conditions; path is the dotted property path of v.
func checkTemplates(v any, path string) error {
	switch x := v.(type) {
	case string:
		check := templates.Check
		if path == controlKey+".if" || path == controlKey+".unless" {
			check = templates.CheckCondition
		}
		if err := check(x); err != nil {
			return fmt.Errorf("property %s: %w", path, err)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			child := k
			if path != "" {
				child = path + "." + k
			}
			if err := checkTemplates(x[k], child); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := checkTemplates(e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// standIn returns a copy of v with its templates stood in for (see
// CheckEnsure: "x" each, or with second null for a whole-value template
// and "0" each otherwise), control left as written, and whether any
// template was found.
func standIn(v any, path string, second bool) (any, bool) {
	switch x := v.(type) {
	case string:
		if !templates.HasTemplate(x) {
			return x, false
		}
		if second && templates.Whole(x) {
			return nil, true
		}
		repl := "x"
		if second {
			repl = "0"
		}
		return templates.Replace(x, repl), true
	case map[string]any:
		out := make(map[string]any, len(x))
		found := false
		for k, e := range x {
			if path == "" && k == controlKey {
				out[k] = e
				continue
			}
			var t bool
			out[k], t = standIn(e, k, second)
			found = found || t
		}
		return out, found
	case []any:
		out := make([]any, len(x))
		found := false
		for i, e := range x {
			var t bool
			out[i], t = standIn(e, path, second)
			found = found || t
		}
		return out, found
	}
	return v, false
}

// CheckManifest validates a manifest's resources as far as that can be
// done without a host, as CheckEnsure does for one resource: every
// template and condition compiles, provider: names a provider of its type,
// and property values are valid whatever the templates expand to. A
// resource whose "*" may set more properties gets the first two checks
// only. The error wraps resources.ErrInvalid and names the resource as
// the manifest declares it (resources[2] file#/etc/motd).
func CheckManifest(m *manifest.Manifest) error {
	for _, u := range m.Unexpanded() {
		t, err := builtinType(u.Type)
		if err != nil {
			return fmt.Errorf("%s: %w", u.Label, err)
		}
		if len(u.Splat) == 0 {
			err = checkProps(t, u.Properties)
		} else {
			err = checkTemplatesAndProvider(t, u.Properties)
			for _, s := range u.Splat {
				if err == nil {
					err = checkTemplates(s, "*")
				}
			}
			if err != nil {
				err = fmt.Errorf("%w: %w", resources.ErrInvalid, err)
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", u.Label, err)
		}
	}
	return nil
}
