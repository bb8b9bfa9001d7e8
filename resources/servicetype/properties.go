package servicetype

import (
	"regexp"
	"strings"

	"github.com/ccm-fleet/ccm/resources"
)

// Ensure values of a service resource.
const (
	// EnsureRunning means the service must be running; it is the default.
	EnsureRunning = "running"
	// EnsureStopped means the service must be stopped.
	EnsureStopped = "stopped"
)

// MaxNameLength is the longest service name accepted, in bytes; it matches
// the longest unit name systemd accepts.
const MaxNameLength = 256

// nameRe is the allow-list for service names: ASCII letters and
// digits plus . _ + : ~ -. Everything else (shell metacharacters,
// whitespace, path separators, '@', NUL, non-ASCII) is rejected.
var nameRe = regexp.MustCompile(`^[A-Za-z0-9._+:~-]+$`)

// Properties are the properties of a service resource.
type Properties struct {
	resources.CommonProperties

	// Enable, when set, says whether the service must start at boot; nil
	// leaves the boot configuration as it is.
	Enable *bool `json:"enable,omitempty"`
}

var _ resources.Properties = (*Properties)(nil)

// Validate sets the default ensure (running) when none is given, then checks
// the common properties, the ensure value and the service name. Failures
// wrap resources.ErrInvalid and name the property at fault.
func (p *Properties) Validate() error {
	if p.Ensure == "" {
		p.Ensure = EnsureRunning
	}
	if err := p.ValidateCommon(); err != nil {
		return err
	}
	switch p.Ensure {
	case EnsureRunning, EnsureStopped:
	default:
		return resources.InvalidField("ensure", "%q is not one of %s, %s", p.Ensure, EnsureRunning, EnsureStopped)
	}
	return ValidateName(p.Name)
}

// ValidateName checks a service name against the allow-list: 1 to
// MaxNameLength bytes of a-z A-Z 0-9 . _ + : ~ -, not starting with '-' (so
// it can never be read as an option). Providers call it too, before running
// anything, as a second line of defence. A failure wraps resources.ErrInvalid.
func ValidateName(name string) error {
	switch {
	case name == "":
		return resources.InvalidFieldPredicate("name", "is required")
	case len(name) > MaxNameLength:
		return resources.InvalidField("name", "service name is longer than %d bytes", MaxNameLength)
	case !nameRe.MatchString(name):
		return resources.InvalidField("name", "service name contains dangerous characters: %q", name)
	case strings.HasPrefix(name, "-"):
		return resources.InvalidField("name", "service name %q must not start with '-'", name)
	}
	return nil
}
