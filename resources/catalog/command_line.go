package catalog

import (
	"slices"
	"strings"
)

// Positional is CCM's positional form of a type's command line: in
// `ensure TYPE NAME ARG`, ARG may set a property instead of the ensure
// value (`ensure archive NAME URL`, `ensure scaffold NAME SOURCE
// [ENSURE]`).
type Positional struct {
	// Property is the property ARG sets when Sets reports it does.
	Property string
	// Help is how the command's help describes ARG's second meaning.
	Help string
	// EnsureAfter reports whether an ensure value may follow ARG as a
	// third argument.
	EnsureAfter bool
	// sets reports whether arg is the property rather than an ensure
	// value.
	sets func(arg string) bool
}

// Sets reports whether arg, the second argument, is p.Property rather
// than an ensure value. An empty arg never is.
func (p *Positional) Sets(arg string) bool {
	return p != nil && arg != "" && p.sets(arg)
}

// isURL reports whether an archive's second argument is its URL.
func isURL(arg string) bool { return strings.Contains(arg, "://") }

// notPresence reports whether a scaffold's second argument is its source:
// anything but its ensure values.
func notPresence(arg string) bool { return arg != "present" && arg != "absent" }

// PositionalOf returns the CCM positional argument of the type called
// name, nil when its second argument is only the ensure value (or the
// catalog has no such type).
func PositionalOf(name string) *Positional {
	e, _ := Lookup(name)
	return e.Positional
}

// NeedsShell reports whether a resource of the type called name with
// provider (as written; "" when it names none) runs through a shell: a
// type with shell providers, and a named provider other than its
// shell-free ones. A signer needs shell: true for it, and such a provider
// is never chosen unless named.
func NeedsShell(name, provider string) bool {
	e, _ := Lookup(name)
	return len(e.ShellFree) > 0 && provider != "" && !slices.Contains(e.ShellFree, provider)
}

// ShellTypes returns the names of the types that have shell providers,
// sorted.
func ShellTypes() []string {
	var out []string
	for _, e := range entries {
		if len(e.ShellFree) > 0 {
			out = append(out, e.Name)
		}
	}
	return out
}

// CommandLine is a type's "ensure TYPE" command, the same in ccm-agent and
// ccm-orch (cmd/internal/resflags registers it).
type CommandLine struct {
	// Order places the command among the others, as CCM shows them: file,
	// exec, package, service, archive, scaffold.
	Order int
	// Help is the command's one line of help.
	Help string
	// NameHelp and EnsureHelp describe its name and ensure arguments.
	NameHelp   string
	EnsureHelp string
	// Flags are its property flags, in the order help shows them.
	Flags []Flag
	// Status is what "ccm-agent status" does with the type.
	Status Status
	// StatusEnsure is the ensure value "ccm-agent status" reads a
	// StatusRead type's state with (a noop ensure of it).
	StatusEnsure StatusEnsure
	// Defaults is what a local "ensure TYPE" (ccm-agent) fills in that
	// its command line left out, as CCM's command line does; manifests
	// and fleet requests still have to say it.
	Defaults LocalDefaults
}

// StatusEnsure is the ensure value status reads a type's state with.
type StatusEnsure int

// Ensure values of status.
const (
	// StatusAsIs: the type's default ensure value.
	StatusAsIs StatusEnsure = iota
	// StatusAbsent: absent, so nothing asks whether the resource could
	// be made present (a package not installed is "absent", whether or
	// not a repository has it).
	StatusAbsent
	// StatusFound: present, or directory for a path that is a directory.
	StatusFound
)

// LocalDefaults is what a local "ensure TYPE" fills in.
type LocalDefaults struct {
	// Owner sets owner and group to the running user's and group's.
	Owner bool
	// Modes sets mode 0644, 0755 for a directory.
	Modes bool
	// NotWhenAbsent skips the defaults for ensure absent, which needs
	// none of them.
	NotWhenAbsent bool
}

// Flag maps one command line flag to one property.
type Flag struct {
	Name     string
	Property string
	Help     string
	Kind     FlagKind
	// Envar, when set, also reads the value from this environment variable.
	Envar string
	// Sep splits FlagMap and FlagPairs values; default "=".
	Sep string
	// Value is what a FlagSwitch sets its property to.
	Value any
	// Aliases are other long names accepted for the flag (spellings of
	// CCM's documentation and of earlier releases), hidden from help.
	Aliases []string
	// CCMNames are CCM's own names of the flag (its ensure commands),
	// accepted and shown in help, which says whose spelling they are.
	CCMNames []string
	// Short is a one-letter name for the flag; 0 for none.
	Short rune
	// Commas splits each value of a FlagStrings flag at commas (lists of
	// account names, as useradd -G takes them).
	Commas bool
}

// FlagKind is how a flag's value maps to a property.
type FlagKind int

// Kinds of flag.
const (
	FlagString   FlagKind = iota // --flag VALUE
	FlagStrings                  // repeatable --flag VALUE, a list
	FlagBool                     // --flag / --no-flag
	FlagInts                     // repeatable --flag N, a list of numbers
	FlagMap                      // repeatable --flag K:V or K=V, an object
	FlagPairs                    // repeatable --flag K=V, a list of single-key objects
	FlagSwitch                   // --flag sets the property to Value; switches of one property conflict
	FlagFileText                 // --flag FILE: the property is the text of the local file FILE
	FlagInt                      // --flag N, one number
)

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

// Commands returns the entries of the types that have an "ensure TYPE"
// command (every one but apply, which exists only inside manifests), in
// command order.
func Commands() []Entry {
	var out []Entry
	for _, e := range entries {
		if e.Command != nil {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return a.Command.Order - b.Command.Order })
	return out
}

var fileCommand = &CommandLine{
	Order:        1,
	Status:       StatusRead,
	StatusEnsure: StatusFound,
	Defaults:     LocalDefaults{Owner: true, Modes: true, NotWhenAbsent: true},
	Help:         "Manage a file or directory: content, owner, group and mode",
	NameHelp:     "Absolute path of the file or directory",
	EnsureHelp:   "present (default), absent or directory",
	Flags: []Flag{
		{Name: "content", Property: "content", Aliases: []string{"contents"}, Help: "File content (templates allowed)"},
		{Name: "content-file", Property: "content", Kind: FlagFileText, Aliases: []string{"contents-file"}, Help: "File content read from this local file (templates allowed)"},
		{Name: "source", Property: "source", Help: "Copy content from this local file"},
		{Name: "owner", Property: "owner", Help: "Owner user name, or OWNER:GROUP (required for present and directory)"},
		{Name: "group", Property: "group", Help: "Group name (required for present and directory)"},
		{Name: "mode", Property: "mode", Help: "Octal permissions such as 0644 (required for present and directory)"},
		{Name: "force", Property: "force", Kind: FlagBool, Help: "With absent, also remove a non-empty directory (only valid with absent)"},
	},
}

var execCommand = &CommandLine{
	Order:      2,
	Status:     StatusUnsupported,
	Help:       "Run a command, idempotently with --creates, guards or --refreshonly",
	NameHelp:   "The command to run, or a label when --command is given",
	EnsureHelp: "present (default; exec is always present)",
	Flags: []Flag{
		{Name: "command", Property: "command", Help: "Command to run instead of the name"},
		{Name: "cwd", Property: "cwd", Help: "Working directory"},
		{Name: "env", Property: "environment", Kind: FlagStrings, Short: 'e', CCMNames: []string{"environment"}, Help: "Extra environment KEY=VALUE (repeatable)"},
		{Name: "path", Property: "path", Help: "Search path for the command, e.g. /usr/bin:/bin"},
		{Name: "returns", Property: "returns", Kind: FlagInts, Help: "Exit code that means success (repeatable; default 0)"},
		{Name: "timeout", Property: "timeout", Help: "Kill the command (and its children) after this long, e.g. 30s"},
		{Name: "creates", Property: "creates", Help: "Skip the command when this file exists"},
		{Name: "onlyif", Property: "onlyif", CCMNames: []string{"exec-if"}, Help: "Run only when this guard command exits 0"},
		{Name: "unless-command", Property: "unless", CCMNames: []string{"exec-unless"}, Help: "Run only when this guard command exits non-zero"},
		{Name: "refreshonly", Property: "refreshonly", Kind: FlagBool, CCMNames: []string{"refresh-only"}, Help: "Run only when a subscribed resource changed"},
		{Name: "logoutput", Property: "logoutput", Kind: FlagBool, Help: "Keep the command's output in the result"},
	},
}

var packageCommand = &CommandLine{
	Order:        3,
	Status:       StatusRead,
	StatusEnsure: StatusAbsent,
	Help:         "Install, upgrade, downgrade or remove a package (apt or dnf)",
	NameHelp:     "Package name",
	EnsureHelp:   "present (default), absent, latest, or a version such as 1.24.0-1",
}

var serviceCommand = &CommandLine{
	Order:      4,
	Status:     StatusRead,
	Help:       "Start or stop a service and enable or disable it at boot (systemd)",
	NameHelp:   "Service (unit) name",
	EnsureHelp: "running (default) or stopped",
	Flags: []Flag{
		{Name: "enable", Property: "enable", Kind: FlagSwitch, Value: true, Help: "Enable the service at boot"},
		{Name: "disable", Property: "enable", Kind: FlagSwitch, Value: false, Help: "Disable the service at boot"},
	},
}

var archiveCommand = &CommandLine{
	Order:      5,
	Status:     StatusUnsupported,
	Defaults:   LocalDefaults{Owner: true},
	Help:       "Download an archive over HTTP(S), verify it and extract it",
	NameHelp:   "Absolute path to save the archive at; its extension must match the URL's",
	EnsureHelp: "present (default) or absent",
	Flags: []Flag{
		{Name: "url", Property: "url", Help: "http:// or https:// URL of a .tar.gz, .tgz, .tar or .zip (or the second argument)"},
		{Name: "checksum", Property: "checksum", Help: "Expected SHA-256 of the archive"},
		{Name: "extract-parent", Property: "extract_parent", CCMNames: []string{"extract"}, Help: "Directory to extract into"},
		{Name: "creates", Property: "creates", Help: "Skip download and extraction when this file exists"},
		{Name: "cleanup", Property: "cleanup", Kind: FlagBool, Help: "Remove the archive after extracting (needs --extract-parent and --creates)"},
		{Name: "owner", Property: "owner", Help: "Owner of the archive file, or OWNER:GROUP"},
		{Name: "group", Property: "group", Help: "Group of the archive file"},
		{Name: "username", Property: "username", Help: "HTTP Basic Authentication user"},
		{Name: "password", Property: "password", Envar: "CCM_ARCHIVE_PASSWORD", Help: "HTTP Basic Authentication password (or env CCM_ARCHIVE_PASSWORD)"},
		{Name: "header", Property: "headers", Kind: FlagMap, Sep: ":", Short: 'H', Aliases: []string{"headers"}, Help: "Extra HTTP header Name:Value (repeatable)"},
	},
}

var scaffoldCommand = &CommandLine{
	Order:      6,
	Help:       "Render a directory of templates into a target directory",
	NameHelp:   "Absolute path of the target directory",
	EnsureHelp: "present (default) or absent",
	Flags: []Flag{
		{Name: "source", Property: "source", Help: "Template directory (relative to the current directory or absolute; or the second argument)"},
		{Name: "engine", Property: "engine", Help: "Template engine: jet (default, [[ ]]) or go ({{ }})"},
		{Name: "skip-empty", Property: "skip_empty", Kind: FlagBool, Help: "Do not create files that render empty"},
		{Name: "left-delimiter", Property: "left_delimiter", Help: "Custom left template delimiter"},
		{Name: "right-delimiter", Property: "right_delimiter", Help: "Custom right template delimiter"},
		{Name: "purge", Property: "purge", Kind: FlagBool, Help: "Remove files in the target that the source does not have"},
		{Name: "post", Property: "post", Kind: FlagPairs, Help: "Run CMD on rendered files matching GLOB, as 'GLOB=CMD' ({} is the file) (repeatable)"},
	},
}

var userCommand = &CommandLine{
	Order:        7,
	Status:       StatusRead,
	StatusEnsure: StatusAbsent,
	Help:         "Manage a local user account: uid, groups, home, shell, password hash, expiry, lock (useradd)",
	NameHelp:     "Account name",
	EnsureHelp:   "present (default) or absent",
	Flags: []Flag{
		{Name: "uid", Property: "uid", Kind: FlagInt, Help: "User id"},
		{Name: "gid", Property: "gid", Kind: FlagInt, Help: "Primary group id (or --group)"},
		{Name: "group", Property: "group", Help: "Primary group, by name or id (or --gid)"},
		{Name: "groups", Property: "groups", Kind: FlagStrings, Commas: true, Help: "Supplementary group (repeatable, or comma separated)"},
		{Name: "membership", Property: "membership", Help: "minimum (default: only add --groups) or inclusive (exactly --groups)"},
		{Name: "home", Property: "home", Help: "Home directory"},
		{Name: "manage-home", Property: "manage_home", Kind: FlagBool, Help: "Create the home with the account (move it when it changes) and remove it with the account"},
		{Name: "shell", Property: "shell", Help: "Login shell"},
		{Name: "comment", Property: "comment", Help: "Comment (GECOS)"},
		{Name: "system", Property: "system", Kind: FlagBool, Help: "Create a system account (system uid range, no aging)"},
		{Name: "password", Property: "password", Envar: "CCM_USER_PASSWORD", Help: "crypt(3) password hash, never a clear text (or env CCM_USER_PASSWORD); always sensitive"},
		{Name: "expiry", Property: "expiry", Help: "Expiry date YYYY-MM-DD, or never"},
		{Name: "lock", Property: "locked", Kind: FlagSwitch, Value: true, Help: "Lock the password"},
		{Name: "unlock", Property: "locked", Kind: FlagSwitch, Value: false, Help: "Unlock the password"},
	},
}

var groupCommand = &CommandLine{
	Order:        8,
	Status:       StatusRead,
	StatusEnsure: StatusAbsent,
	Help:         "Manage a local group: gid and members (groupadd)",
	NameHelp:     "Group name",
	EnsureHelp:   "present (default) or absent",
	Flags: []Flag{
		{Name: "gid", Property: "gid", Kind: FlagInt, Help: "Group id"},
		{Name: "system", Property: "system", Kind: FlagBool, Help: "Create a system group (system gid range)"},
		{Name: "members", Property: "members", Kind: FlagStrings, Commas: true, Help: "Member user name (repeatable, or comma separated)"},
		{Name: "membership", Property: "membership", Help: "minimum (default: only add --members) or inclusive (exactly --members)"},
	},
}
