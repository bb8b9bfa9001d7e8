package resflags

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/choria-io/fisk"
)

// Kind is how a flag's value maps to a property.
type Kind int

// Kinds of flag.
const (
	String   Kind = iota // --flag VALUE
	Strings              // repeatable --flag VALUE, a list
	Bool                 // --flag / --no-flag
	Ints                 // repeatable --flag N, a list of numbers
	Map                  // repeatable --flag K:V or K=V, an object
	Pairs                // repeatable --flag K=V, a list of single-key objects
	Switch               // --flag sets the property to Value; switches of one property conflict
	FileText             // --flag FILE: the property is the text of the local file FILE
)

// maxFileText bounds a file read by a FileText flag.
const maxFileText = 1 << 20

// Flag maps one command line flag to one property.
type Flag struct {
	Name     string
	Property string
	Help     string
	Kind     Kind
	// Envar, when set, also reads the value from this environment variable.
	Envar string
	// Sep splits Map and Pairs values; default "=".
	Sep string
	// Value is what a Switch sets its property to.
	Value any
	// Aliases are other long names accepted for the flag (spellings of
	// CCM's documentation and of earlier releases), hidden from help.
	Aliases []string
	// CCMNames are CCM's own names of the flag (its cmd/ensure_*.go),
	// accepted and shown in help, which says whose spelling they are.
	CCMNames []string
	// Short is a one-letter name for the flag; 0 for none.
	Short rune
}

// Status is what "ccm-agent status" does with a type.
type Status int

// Statuses, as in CCM.
const (
	// StatusNone: status does not take the type.
	StatusNone Status = iota
	// StatusRead: status reads the type's state from its name alone.
	StatusRead
	// StatusUnsupported: status takes the type and says it needs more
	// than a name (a command, a URL) to tell its state.
	StatusUnsupported
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

// Table lists every type's flags in the order commands are shown.
var Table = []TypeFlags{
	{
		Type:       "file",
		Status:     StatusRead,
		Help:       "Manage a file or directory: content, owner, group and mode",
		NameHelp:   "Absolute path of the file or directory",
		EnsureHelp: "present (default), absent or directory",
		Flags: []Flag{
			{Name: "content", Property: "content", Aliases: []string{"contents"}, Help: "File content (templates allowed)"},
			{Name: "content-file", Property: "content", Kind: FileText, Aliases: []string{"contents-file"}, Help: "File content read from this local file (templates allowed)"},
			{Name: "source", Property: "source", Help: "Copy content from this local file"},
			{Name: "owner", Property: "owner", Help: "Owner user name, or OWNER:GROUP (required for present and directory)"},
			{Name: "group", Property: "group", Help: "Group name (required for present and directory)"},
			{Name: "mode", Property: "mode", Help: "Octal permissions such as 0644 (required for present and directory)"},
			{Name: "force", Property: "force", Kind: Bool, Help: "With absent, also remove a non-empty directory"},
		},
	},
	{
		Type:       "exec",
		Subscribe:  true,
		Status:     StatusUnsupported,
		Help:       "Run a command, idempotently with --creates, guards or --refreshonly",
		NameHelp:   "The command to run, or a label when --command is given",
		EnsureHelp: "present (default; exec is always present)",
		Flags: []Flag{
			{Name: "command", Property: "command", Help: "Command to run instead of the name"},
			{Name: "cwd", Property: "cwd", Help: "Working directory"},
			{Name: "env", Property: "environment", Kind: Strings, Short: 'e', CCMNames: []string{"environment"}, Help: "Extra environment KEY=VALUE (repeatable)"},
			{Name: "path", Property: "path", Help: "Search path for the command, e.g. /usr/bin:/bin"},
			{Name: "returns", Property: "returns", Kind: Ints, Help: "Exit code that means success (repeatable; default 0)"},
			{Name: "timeout", Property: "timeout", Help: "Kill the command (and its children) after this long, e.g. 30s"},
			{Name: "creates", Property: "creates", Help: "Skip the command when this file exists"},
			{Name: "onlyif", Property: "onlyif", CCMNames: []string{"exec-if"}, Help: "Run only when this guard command exits 0"},
			{Name: "unless-command", Property: "unless", CCMNames: []string{"exec-unless"}, Help: "Run only when this guard command exits non-zero"},
			{Name: "refreshonly", Property: "refreshonly", Kind: Bool, CCMNames: []string{"refresh-only"}, Help: "Run only when a subscribed resource changed"},
			{Name: "logoutput", Property: "logoutput", Kind: Bool, Help: "Keep the command's output in the result"},
		},
	},
	{
		Type:       "package",
		Status:     StatusRead,
		Help:       "Install, upgrade, downgrade or remove a package (apt or dnf)",
		NameHelp:   "Package name",
		EnsureHelp: "present (default), absent, latest, or a version such as 1.24.0-1",
	},
	{
		Type:       "service",
		Subscribe:  true,
		Status:     StatusRead,
		Help:       "Start or stop a service and enable or disable it at boot (systemd)",
		NameHelp:   "Service (unit) name",
		EnsureHelp: "running (default) or stopped",
		Flags: []Flag{
			{Name: "enable", Property: "enable", Kind: Switch, Value: true, Help: "Enable the service at boot"},
			{Name: "disable", Property: "enable", Kind: Switch, Value: false, Help: "Disable the service at boot"},
		},
	},
	{
		Type:       "archive",
		Status:     StatusUnsupported,
		Help:       "Download an archive over HTTP(S), verify it and extract it",
		NameHelp:   "Absolute path to save the archive at; its extension must match the URL's",
		EnsureHelp: "present (default) or absent",
		Flags: []Flag{
			{Name: "url", Property: "url", Help: "http:// or https:// URL of a .tar.gz, .tgz, .tar or .zip (or the second argument)"},
			{Name: "checksum", Property: "checksum", Help: "Expected SHA-256 of the archive"},
			{Name: "extract-parent", Property: "extract_parent", CCMNames: []string{"extract"}, Help: "Directory to extract into"},
			{Name: "creates", Property: "creates", Help: "Skip download and extraction when this file exists"},
			{Name: "cleanup", Property: "cleanup", Kind: Bool, Help: "Remove the archive after extracting (needs --extract-parent and --creates)"},
			{Name: "owner", Property: "owner", Help: "Owner of the archive file, or OWNER:GROUP"},
			{Name: "group", Property: "group", Help: "Group of the archive file"},
			{Name: "username", Property: "username", Help: "HTTP Basic Authentication user"},
			{Name: "password", Property: "password", Envar: "CCM_ARCHIVE_PASSWORD", Help: "HTTP Basic Authentication password (or env CCM_ARCHIVE_PASSWORD)"},
			{Name: "header", Property: "headers", Kind: Map, Sep: ":", Short: 'H', Aliases: []string{"headers"}, Help: "Extra HTTP header Name:Value (repeatable)"},
		},
	},
	{
		Type:       "scaffold",
		Help:       "Render a directory of templates into a target directory",
		NameHelp:   "Absolute path of the target directory",
		EnsureHelp: "present (default) or absent",
		Flags: []Flag{
			{Name: "source", Property: "source", Help: "Template directory (relative to the current directory or absolute; or the second argument)"},
			{Name: "engine", Property: "engine", Help: "Template engine: jet (default, [[ ]]) or go ({{ }})"},
			{Name: "skip-empty", Property: "skip_empty", Kind: Bool, Help: "Do not create files that render empty"},
			{Name: "left-delimiter", Property: "left_delimiter", Help: "Custom left template delimiter"},
			{Name: "right-delimiter", Property: "right_delimiter", Help: "Custom right template delimiter"},
			{Name: "purge", Property: "purge", Kind: Bool, Help: "Remove files in the target that the source does not have"},
			{Name: "post", Property: "post", Kind: Pairs, Help: "Run CMD on rendered files matching GLOB, as 'GLOB=CMD' ({} is the file) (repeatable)"},
		},
	},
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
	case String, FileText:
		s, ok := v.strs[f.Name]
		if !ok {
			s = new(string)
			v.strs[f.Name] = s
		}
		fc.PlaceHolder(strings.ToUpper(f.Property)).StringVar(s)
	case Bool, Switch:
		b, ok := v.bools[f.Name]
		if !ok {
			b = new(bool)
			v.bools[f.Name] = b
		}
		if f.Kind == Bool {
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
		if _, dup := props[f.Property]; dup && f.Kind != Switch {
			return nil, fmt.Errorf("--%s and another flag both set property %s: use one", f.Name, f.Property)
		}
		switch f.Kind {
		case String:
			props[f.Property] = *v.strs[f.Name]
		case FileText:
			text, err := readFileText(*v.strs[f.Name])
			if err != nil {
				return nil, fmt.Errorf("--%s: %w", f.Name, err)
			}
			props[f.Property] = text
		case Bool:
			props[f.Property] = *v.bools[f.Name]
		case Switch:
			if other, ok := switchedBy[f.Property]; ok {
				return nil, fmt.Errorf("--%s and --%s cannot be used together", other, f.Name)
			}
			switchedBy[f.Property] = f.Name
			props[f.Property] = f.Value
		case Strings:
			props[f.Property] = toAny(*v.lists[f.Name])
		case Ints:
			var codes []any
			for _, s := range *v.lists[f.Name] {
				n, err := strconv.Atoi(s)
				if err != nil {
					return nil, fmt.Errorf("--%s: %q is not a whole number", f.Name, s)
				}
				codes = append(codes, n)
			}
			props[f.Property] = codes
		case Map, Pairs:
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
				if f.Kind == Map {
					m[k] = strings.TrimSpace(val)
				} else {
					pairs = append(pairs, map[string]any{k: val})
				}
			}
			if f.Kind == Map {
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
