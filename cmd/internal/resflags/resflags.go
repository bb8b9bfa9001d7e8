package resflags

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/resources/catalog"
)

// maxFileText bounds a file read by a FileText flag.
const maxFileText = 1 << 20

// Flag maps one command line flag to one property; the resource catalog
// declares them.
type Flag = catalog.Flag

// Status is what "ccm-agent status" does with a type.
type Status = catalog.Status

// Statuses, as in CCM (see catalog.Status).
const (
	StatusNone        = catalog.StatusNone
	StatusRead        = catalog.StatusRead
	StatusUnsupported = catalog.StatusUnsupported
)

// TypeFlags are the flags of one resource type.
type TypeFlags struct {
	Type       string
	Help       string
	NameHelp   string
	EnsureHelp string
	Flags      []Flag
	// Subscribe is whether the command takes --subscribe: the type is
	// refreshed when a resource it subscribes to changed, as in CCM.
	Subscribe bool
	// Status is what "ccm-agent status" does with the type.
	Status Status
	// StatusEnsure is the ensure value status reads the type with.
	StatusEnsure catalog.StatusEnsure
	// Defaults is what a local "ensure TYPE" fills in.
	Defaults catalog.LocalDefaults
}

// StatusTypes returns the types "ccm-agent status" takes with s, in
// table order.
func StatusTypes(s Status) []string {
	var out []string
	for _, t := range Table {
		if t.Status == s {
			out = append(out, t.Type)
		}
	}
	return out
}

// Table lists every type's flags in the order commands are shown: the
// command line of each type of the resource catalog that has one.
var Table = table()

// table builds Table from the resource catalog.
func table() []TypeFlags {
	var out []TypeFlags
	for _, e := range catalog.Commands() {
		c := e.Command
		out = append(out, TypeFlags{
			Type:       e.Name,
			Help:       c.Help,
			NameHelp:   c.NameHelp,
			EnsureHelp: c.EnsureHelp,
			Flags:      slices.Clone(c.Flags),
			Subscribe:  e.Refreshes,
			Status:     c.Status,

			StatusEnsure: c.StatusEnsure,
			Defaults:     c.Defaults,
		})
	}
	return out
}

// Lookup returns the flags of a type.
func Lookup(typeName string) (TypeFlags, bool) {
	for _, t := range Table {
		if t.Type == typeName {
			return t, true
		}
	}
	return TypeFlags{}, false
}

// Values holds the parsed flags of one command.
type Values struct {
	strs  map[string]*string
	lists map[string]*[]string
	bools map[string]*bool
	set   map[string]*bool
	// aliasSet records, per flag name, whether each alias was given.
	aliasSet map[string][]*bool
	flags    []Flag
}

// Register adds the type's flags to cmd and returns where their values land.
func Register(cmd *fisk.CmdClause, t TypeFlags) *Values {
	v := &Values{strs: map[string]*string{}, lists: map[string]*[]string{}, bools: map[string]*bool{}, set: map[string]*bool{}, aliasSet: map[string][]*bool{}, flags: t.Flags}
	for _, f := range t.Flags {
		fc := cmd.Flag(f.Name, f.Help)
		if f.Envar != "" {
			fc = fc.Envar(f.Envar)
		}
		if f.Short != 0 {
			fc = fc.Short(f.Short)
		}
		set := new(bool)
		v.set[f.Name] = set
		v.bind(fc.IsSetByUser(set), f)
		for _, alias := range f.Aliases {
			aliasSet := new(bool)
			v.aliasSet[f.Name] = append(v.aliasSet[f.Name], aliasSet)
			v.bind(cmd.Flag(alias, f.Help).Hidden().IsSetByUser(aliasSet), f)
		}
		for _, name := range f.CCMNames {
			aliasSet := new(bool)
			v.aliasSet[f.Name] = append(v.aliasSet[f.Name], aliasSet)
			v.bind(cmd.Flag(name, "CCM's name for --"+f.Name).IsSetByUser(aliasSet), f)
		}
	}
	return v
}

// bind makes fc fill the value of f (the same value for f and its aliases).
func (v *Values) bind(fc *fisk.FlagClause, f Flag) {
	switch f.Kind {
	case catalog.FlagString, catalog.FlagFileText, catalog.FlagInt:
		s, ok := v.strs[f.Name]
		if !ok {
			s = new(string)
			v.strs[f.Name] = s
		}
		fc.PlaceHolder(strings.ToUpper(f.Property)).StringVar(s)
	case catalog.FlagBool, catalog.FlagSwitch:
		b, ok := v.bools[f.Name]
		if !ok {
			b = new(bool)
			v.bools[f.Name] = b
		}
		if f.Kind == catalog.FlagBool {
			fc.BoolVar(b)
		} else {
			fc.UnNegatableBoolVar(b)
		}
	default:
		l, ok := v.lists[f.Name]
		if !ok {
			l = new([]string)
			v.lists[f.Name] = l
		}
		fc.StringsVar(l)
	}
}

// isSet reports whether the user gave the flag f under its name or an alias.
func (v *Values) isSet(f Flag) bool {
	if *v.set[f.Name] {
		return true
	}
	for _, b := range v.aliasSet[f.Name] {
		if *b {
			return true
		}
	}
	return false
}

// Properties returns the properties of the flags the user set.
func (v *Values) Properties() (map[string]any, error) {
	props := map[string]any{}
	switchedBy := map[string]string{}
	for _, f := range v.flags {
		if !v.isSet(f) && !(f.Envar != "" && os.Getenv(f.Envar) != "") {
			continue
		}
		if _, dup := props[f.Property]; dup && f.Kind != catalog.FlagSwitch {
			return nil, fmt.Errorf("--%s and another flag both set property %s: use one", f.Name, f.Property)
		}
		switch f.Kind {
		case catalog.FlagString:
			props[f.Property] = *v.strs[f.Name]
		case catalog.FlagFileText:
			text, err := readFileText(*v.strs[f.Name])
			if err != nil {
				return nil, fmt.Errorf("--%s: %w", f.Name, err)
			}
			props[f.Property] = text
		case catalog.FlagBool:
			props[f.Property] = *v.bools[f.Name]
		case catalog.FlagSwitch:
			if other, ok := switchedBy[f.Property]; ok {
				return nil, fmt.Errorf("--%s and --%s cannot be used together", other, f.Name)
			}
			switchedBy[f.Property] = f.Name
			props[f.Property] = f.Value
		case catalog.FlagInt:
			n, err := strconv.ParseInt(*v.strs[f.Name], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("--%s: %q is not a whole number", f.Name, *v.strs[f.Name])
			}
			props[f.Property] = n
		case catalog.FlagStrings:
			props[f.Property] = toAny(splitCommas(f, *v.lists[f.Name]))
		case catalog.FlagInts:
			var codes []any
			for _, s := range *v.lists[f.Name] {
				n, err := strconv.Atoi(s)
				if err != nil {
					return nil, fmt.Errorf("--%s: %q is not a whole number", f.Name, s)
				}
				codes = append(codes, n)
			}
			props[f.Property] = codes
		case catalog.FlagMap, catalog.FlagPairs:
			sep := f.Sep
			if sep == "" {
				sep = "="
			}
			m := map[string]any{}
			var pairs []any
			for _, s := range *v.lists[f.Name] {
				k, val, ok := strings.Cut(s, sep)
				k = strings.TrimSpace(k)
				if !ok || k == "" {
					return nil, fmt.Errorf("--%s: %q must look like KEY%sVALUE", f.Name, s, sep)
				}
				if f.Kind == catalog.FlagMap {
					m[k] = strings.TrimSpace(val)
				} else {
					pairs = append(pairs, map[string]any{k: val})
				}
			}
			if f.Kind == catalog.FlagMap {
				props[f.Property] = m
			} else {
				props[f.Property] = pairs
			}
		}
	}
	if err := splitOwner(props, v.has("group")); err != nil {
		return nil, err
	}
	return props, nil
}

// splitCommas splits each value of a flag whose property is a list of
// account names at commas (--groups adm,sudo), as useradd -G does; other
// lists keep their commas.
func splitCommas(f Flag, values []string) []string {
	if !f.Commas {
		return values
	}
	var out []string
	for _, s := range values {
		for part := range strings.SplitSeq(s, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

// readFileText reads the text of a local file, at most maxFileText bytes.
func readFileText(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileText+1))
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > maxFileText {
		return "", fmt.Errorf("%s: more than %d bytes", path, maxFileText)
	}
	return string(b), nil
}

// has reports whether the flags include one called name.
func (v *Values) has(name string) bool {
	for _, f := range v.flags {
		if f.Name == name {
			return true
		}
	}
	return false
}

// splitOwner turns CCM's --owner USER:GROUP into the owner and group
// properties; with --group as well it is an error.
func splitOwner(props map[string]any, hasGroup bool) error {
	owner, ok := props["owner"].(string)
	if !ok || !hasGroup {
		return nil
	}
	user, group, found := strings.Cut(owner, ":")
	if !found {
		return nil
	}
	if _, given := props["group"]; given {
		return fmt.Errorf("--owner %q names a group and --group is given too: use one", owner)
	}
	if user == "" || group == "" {
		return fmt.Errorf("--owner %q: use USER:GROUP with both parts, or --owner USER --group GROUP", owner)
	}
	props["owner"], props["group"] = user, group
	return nil
}

func toAny(in []string) []any {
	out := make([]any, len(in))
	for i, s := range in {
		out[i] = s
	}
	return out
}
