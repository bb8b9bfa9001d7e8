package resources

import (
	"fmt"
	"regexp"
	"strings"
)

// Properties is the typed, decoded property set of one resource.
type Properties interface {
	// Common returns the properties every type shares.
	Common() *CommonProperties
	// Validate normalises the properties (defaults, alternative spellings
	// such as contents for content) and checks them. A failure wraps
	// ErrInvalid and names the property at fault.
	Validate() error
}

// CommonProperties are shared by every resource type. Types embed it so the
// fields appear at the top level of their properties.
type CommonProperties struct {
	// Name identifies the resource; its meaning depends on the type (a path,
	// a command, a package name).
	Name string `json:"name"`
	// Alias is a second name that require and subscribe may use.
	Alias string `json:"alias,omitempty"`
	// Ensure is the desired state; each type documents its values and default.
	Ensure string `json:"ensure,omitempty"`
	// Provider forces a provider instead of selection by facts.
	Provider string `json:"provider,omitempty"`
	// Require lists type#name references that must have succeeded first.
	Require []string `json:"require,omitempty"`
	// Subscribe lists type#name references whose change refreshes this resource.
	Subscribe []string `json:"subscribe,omitempty"`
	// Control decides whether the resource is managed at all.
	Control *Control `json:"control,omitempty"`
	// Sensitive keeps the resource's content out of diffs, events, logs and
	// history: diffs say only "content differs; sensitive" and the event's
	// properties hide every content-bearing value. The engine also sets it
	// when a template of the resource reads data marked sensitive.
	Sensitive bool `json:"sensitive,omitempty"`
	// HealthChecks run after the resource is applied, also when it failed.
	HealthChecks []HealthCheck `json:"health_checks,omitempty"`
	// RegisterWhenStable are the service endpoints the continuous agent
	// registers while the resource is stable (see Registration); other
	// runs ignore them.
	RegisterWhenStable []Registration `json:"register_when_stable,omitempty"`
}

// Common returns the common properties.
func (c *CommonProperties) Common() *CommonProperties { return c }

// Control holds conditions evaluated against facts and data before a
// resource is managed. The resource is managed when If is unset or true and
// Unless is unset or false.
type Control struct {
	If     string `json:"if,omitempty"`
	Unless string `json:"unless,omitempty"`
}

var (
	refRe     = regexp.MustCompile(`^[a-z]+#.+$`)
	ensureRe  = regexp.MustCompile(`^[A-Za-z0-9._+:~-]+$`)
	maxName   = 4096
	maxEnsure = 256
)

// ValidateCommon checks the shared properties; types call it from Validate
// after setting their defaults.
func (c *CommonProperties) ValidateCommon() error {
	switch {
	case c.Name == "":
		return InvalidFieldPredicate("name", "is required")
	case len(c.Name) > maxName:
		return InvalidFieldPredicate("name", "is longer than %d bytes", maxName)
	case strings.ContainsRune(c.Name, 0):
		return InvalidFieldPredicate("name", "contains a NUL byte")
	case c.Ensure == "":
		return InvalidFieldPredicate("ensure", "is required")
	case len(c.Ensure) > maxEnsure || !ensureRe.MatchString(c.Ensure):
		return InvalidFieldPredicate("ensure", "%q contains characters that are not allowed", c.Ensure)
	}
	if len(c.HealthChecks) > MaxHealthChecks {
		return InvalidField("health_checks", "%d checks, the limit is %d", len(c.HealthChecks), MaxHealthChecks)
	}
	for i := range c.HealthChecks {
		if err := c.HealthChecks[i].validate(); err != nil {
			return InvalidField(fmt.Sprintf("health_checks[%d]", i), "%s", err)
		}
	}
	if err := validateRegistrations(c.RegisterWhenStable); err != nil {
		return err
	}
	for _, list := range []struct {
		name string
		refs []string
	}{{"require", c.Require}, {"subscribe", c.Subscribe}} {
		for _, r := range list.refs {
			if !refRe.MatchString(r) {
				return InvalidField(list.name, "%q is not a type#name reference", r)
			}
		}
	}
	return nil
}

// ParseRef splits a type#name reference.
func ParseRef(ref string) (typeName, name string, ok bool) {
	if !refRe.MatchString(ref) {
		return "", "", false
	}
	typeName, name, _ = strings.Cut(ref, "#")
	return typeName, name, true
}

// SecretHolder is implemented by properties that hold a value which never
// leaves the host whatever their sensitive property says (a user's
// password hash). The engine makes such a resource sensitive and redacts
// those properties and values in every record about it.
type SecretHolder interface {
	// Secrets returns the secret properties' names and their values; none
	// when the properties hold no secret.
	Secrets() (properties, values []string)
}
