package exectype

import (
	"errors"
	"path/filepath"
	"strings"
	"time"

	"github.com/kballard/go-shellquote"

	"github.com/ccm-fleet/ccm/resources"
)

// EnsurePresent is the only ensure value of an exec resource, and its default.
const EnsurePresent = "present"

// maxExitCode is the largest exit status a process can report.
const maxExitCode = 255

// Properties are the properties of an exec resource. The JSON tags are the
// property names a resource may use.
type Properties struct {
	resources.CommonProperties

	// Command is the command line to run; Validate sets it to Name when empty.
	Command string `json:"command,omitempty"`
	// Cwd is the absolute working directory of the command.
	Cwd string `json:"cwd,omitempty"`
	// Environment holds KEY=VALUE pairs added to the base environment
	// (BasePath and BaseEnvironment).
	Environment []string `json:"environment,omitempty"`
	// Path is the colon separated search path, of absolute directories, used
	// to find the executable and given to the command as PATH.
	Path string `json:"path,omitempty"`
	// Returns lists the exit codes that mean success; Validate defaults it to [0].
	Returns []int `json:"returns,omitempty"`
	// Timeout is how long the command may run (a Go duration such as 30s or
	// 5m) before its whole process group is killed.
	Timeout string `json:"timeout,omitempty"`
	// Creates is a file whose existence means the command has done its work,
	// so it is not run.
	Creates string `json:"creates,omitempty"`
	// OnlyIf is a guard command: the command runs only when it exits 0.
	OnlyIf string `json:"onlyif,omitempty"`
	// Unless is a guard command: the command runs only when it exits
	// non-zero. It is unrelated to control.unless, which decides whether the
	// resource is managed at all.
	Unless string `json:"unless,omitempty"`
	// RefreshOnly runs the command only when a subscribed resource changed.
	RefreshOnly bool `json:"refreshonly,omitempty"`
	// RefreshOnlyAlias is the alternative spelling refresh_only; Validate
	// folds it into RefreshOnly and clears it.
	RefreshOnlyAlias bool `json:"refresh_only,omitempty"`
	// LogOutput logs the command's output and keeps it, bounded, in the state.
	LogOutput bool `json:"logoutput,omitempty"`
}

var _ resources.Properties = (*Properties)(nil)

// CommandLine returns the command line to run: Command, or Name when Command
// is empty.
func (p *Properties) CommandLine() string {
	if p.Command != "" {
		return p.Command
	}
	return p.Name
}

// TimeoutDuration returns Timeout as a duration, zero when unset (or, before
// Validate, when it does not parse).
func (p *Properties) TimeoutDuration() time.Duration {
	if p.Timeout == "" {
		return 0
	}
	d, err := time.ParseDuration(p.Timeout)
	if err != nil || d < 0 {
		return 0
	}
	return d
}

// AcceptedReturns returns the exit codes that mean success, [0] when Returns
// is empty.
func (p *Properties) AcceptedReturns() []int {
	if len(p.Returns) == 0 {
		return []int{0}
	}
	return p.Returns
}

// Validate sets the defaults (ensure present, command from name, returns
// [0], refresh_only folded into refreshonly) and checks every property. A
// failure wraps resources.ErrInvalid and names the property at fault.
func (p *Properties) Validate() error {
	if p.Ensure == "" {
		p.Ensure = EnsurePresent
	}
	if p.Command == "" {
		p.Command = p.Name
	}
	if len(p.Returns) == 0 {
		p.Returns = []int{0}
	}
	p.RefreshOnly = p.RefreshOnly || p.RefreshOnlyAlias
	p.RefreshOnlyAlias = false

	if err := p.ValidateCommon(); err != nil {
		return err
	}
	if p.Ensure != EnsurePresent {
		return resources.InvalidField("ensure", "exec resources are always %q, not %q", EnsurePresent, p.Ensure)
	}
	for _, c := range []struct{ name, line string }{
		{"name", p.Name}, {"command", p.Command}, {"onlyif", p.OnlyIf}, {"unless", p.Unless},
	} {
		if c.line == "" && (c.name == "onlyif" || c.name == "unless") {
			continue
		}
		if err := checkCommandLine(c.line); err != nil {
			return resources.InvalidField(c.name, "%s", err)
		}
	}
	if err := p.validateTimeout(); err != nil {
		return err
	}
	if err := p.validatePath(); err != nil {
		return err
	}
	if err := p.validateEnvironment(); err != nil {
		return err
	}
	for _, c := range p.Returns {
		if c < 0 || c > maxExitCode {
			return resources.InvalidField("returns", "%d is not an exit code (0-%d)", c, maxExitCode)
		}
	}
	for _, d := range []struct{ name, path string }{{"cwd", p.Cwd}, {"creates", p.Creates}} {
		if strings.ContainsRune(d.path, 0) {
			return resources.InvalidField(d.name, "%s", errNUL)
		}
		if d.path != "" && !filepath.IsAbs(d.path) {
			return resources.InvalidField(d.name, "%q is not an absolute path", d.path)
		}
	}
	return nil
}

// checkCommandLine reports why line cannot be split into words, or that it
// holds none.
func checkCommandLine(line string) error {
	if strings.ContainsRune(line, 0) {
		return errNUL
	}
	words, err := shellquote.Split(line)
	if err != nil {
		return err
	}
	if len(words) == 0 {
		return ErrNoCommand
	}
	return nil
}

func (p *Properties) validateTimeout() error {
	if p.Timeout == "" {
		return nil
	}
	d, err := time.ParseDuration(p.Timeout)
	if err != nil {
		return resources.InvalidField("timeout", "%q is not a duration such as 30s or 5m", p.Timeout)
	}
	if d <= 0 {
		return resources.InvalidField("timeout", "%q must be longer than zero", p.Timeout)
	}
	return nil
}

func (p *Properties) validatePath() error {
	if p.Path == "" {
		return nil
	}
	if strings.ContainsRune(p.Path, 0) {
		return resources.InvalidField("path", "%s", errNUL)
	}
	for _, dir := range strings.Split(p.Path, ":") {
		if dir == "" {
			return resources.InvalidField("path", "%q has an empty directory", p.Path)
		}
		if !strings.HasPrefix(dir, "/") {
			return resources.InvalidField("path", "%q is not an absolute directory", dir)
		}
	}
	return nil
}

func (p *Properties) validateEnvironment() error {
	for _, kv := range p.Environment {
		key, value, ok := strings.Cut(kv, "=")
		switch {
		case !ok:
			return resources.InvalidField("environment", "%q is not KEY=VALUE", kv)
		case key == "":
			return resources.InvalidField("environment", "%q has an empty key", kv)
		case value == "":
			return resources.InvalidField("environment", "%q has an empty value", kv)
		case strings.ContainsRune(kv, 0):
			return resources.InvalidField("environment", "%q contains a NUL byte", kv)
		case !ValidEnvKey(key):
			return resources.InvalidField("environment", "key %q is not a variable name (letters, digits and _, not starting with a digit)", key)
		}
	}
	return nil
}

// errNUL is why a value with a NUL byte cannot reach a process or a file
// system call.
var errNUL = errors.New("contains a NUL byte")

// ValidEnvKey reports whether k is a portable environment variable name:
// ASCII letters, digits and '_', not starting with a digit.
func ValidEnvKey(k string) bool {
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return k != ""
}
