package redact

import (
	"slices"
	"strings"
)

// Marker stands in for a value that must not leave the host.
const Marker = "[redacted]"

// MinContained is the shortest secret value looked for inside longer texts;
// shorter ones are redacted only where they are a whole value, as they
// would match too much by chance.
const MinContained = 4

// maxValues bounds the secret values one resource keeps.
const maxValues = 1024

// Secrets says what of one resource must not leave the host. A nil or
// inactive Secrets redacts nothing. It is not safe for concurrent
// modification; once built it is only read.
type Secrets struct {
	// Ref names the resource (type#name) in withheld messages; names are
	// never redacted, they identify the resource.
	Ref string
	// Sensitive is set for a sensitive resource: only then is anything
	// redacted.
	Sensitive bool
	// properties are the top-level property names whose values must not
	// leave (templated properties of a sensitive resource)
	properties map[string]bool
	// values are the secret strings: templated property values and the
	// values of data marked sensitive
	values []string
}

// New returns the Secrets of resource ref; sensitive says whether anything
// of it is to be redacted.
func New(ref string, sensitive bool) *Secrets {
	return &Secrets{Ref: ref, Sensitive: sensitive}
}

// Sensitively returns the Secrets of a resource known only to be
// sensitive: its content, outputs and health messages are redacted, no
// particular value is known.
func Sensitively(ref string) *Secrets { return New(ref, true) }

// AddProperty marks a top-level property's value as secret.
func (s *Secrets) AddProperty(name string) {
	if s.properties == nil {
		s.properties = map[string]bool{}
	}
	s.properties[name] = true
}

// AddValues adds secret values; empty ones are ignored and at most
// maxValues are kept (the longest first, so the most telling stay).
func (s *Secrets) AddValues(vs ...string) {
	for _, v := range vs {
		if strings.TrimSpace(v) != "" && !slices.Contains(s.values, v) {
			s.values = append(s.values, v)
		}
	}
	if len(s.values) > maxValues {
		slices.SortFunc(s.values, func(a, b string) int { return len(b) - len(a) })
		s.values = s.values[:maxValues]
	}
}

// Active reports whether s redacts anything.
func (s *Secrets) Active() bool { return s != nil && s.Sensitive }

// SecretProperty reports whether the value of property name is secret.
func (s *Secrets) SecretProperty(name string) bool {
	return s.Active() && s.properties[name]
}

// Output is what leaves of a command's output, a health-check message or a
// content: Marker for an active s and a non-empty v.
func (s *Secrets) Output(v string) string {
	if s.Active() && v != "" {
		return Marker
	}
	return v
}

// Value is what leaves of the value v of property name (empty: of no
// particular property): Marker when the property is secret or v holds a
// secret value.
func (s *Secrets) Value(name, v string) string {
	if v != "" && (s.SecretProperty(name) || s.Holds(v)) {
		return Marker
	}
	return v
}

// Holds reports whether text is a secret value or contains one at least
// MinContained bytes long.
func (s *Secrets) Holds(text string) bool {
	if !s.Active() || text == "" {
		return false
	}
	for _, v := range s.values {
		if text == v || len(v) >= MinContained && strings.Contains(text, v) {
			return true
		}
	}
	return false
}

// Withheld is the message that stands in for one that cannot be shown at
// all: the resource, then Marker.
func (s *Secrets) Withheld() string {
	if s.Ref == "" {
		return Marker
	}
	return s.Ref + ": " + Marker
}
