package policy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/ccm-fleet/ccm/agent/scope"
)

// MaxRegistrationServices bounds a signer's registration.services.
const MaxRegistrationServices = 1000

var validServiceName = regexp.MustCompile(`^[a-zA-Z][a-zA-Z\d_-]*$`)

// RegistrationScope says which services the manifests of a signer may
// make a host register (register_when_stable entries).
type RegistrationScope struct {
	// Services are service names; "*" allows every service.
	Services []string `json:"services" yaml:"services"`
}

// validate checks the names.
func (r *RegistrationScope) validate() error {
	if r == nil {
		return nil
	}
	if len(r.Services) > MaxRegistrationServices {
		return fmt.Errorf("registration.services: %d, the limit is %d", len(r.Services), MaxRegistrationServices)
	}
	for i, s := range r.Services {
		if s != "*" && !validServiceName.MatchString(s) {
			return fmt.Errorf("registration.services[%d] %.60q: a service name ([a-zA-Z][a-zA-Z0-9_-]*) or *", i, s)
		}
	}
	return nil
}

// CheckLocalRegistration judges a registration of service by a manifest
// of the host's own (a local file, or a bundle vouched for by a pinned
// checksum rather than a signer): allowed only when the policy's top-level
// registration.services lists it (or "*"); without it such manifests
// register nothing.
func (p *Policy) CheckLocalRegistration(service string) scope.Decision {
	return checkRegistration(p.Registration, service, "this host's own manifests may not register services")
}

// CheckRegistration judges a registration of service by a manifest signer
// s sent: allowed only when registration.services lists it (or "*");
// without registration.services a signer's manifests register nothing.
func (s *Signer) CheckRegistration(service string) scope.Decision {
	return checkRegistration(s.Registration, service, "this signer's manifests may not register services")
}

// checkRegistration judges service against r; none is the reason when r
// is nil.
func checkRegistration(r *RegistrationScope, service, none string) scope.Decision {
	d := scope.Decision{Check: "registration.services", Value: service}
	if r == nil {
		d.Rule = "registration.services (none)"
		d.Reason = none
		return d
	}
	d.Rule = "registration.services [" + strings.Join(r.Services, ", ") + "]"
	d.Allowed = slices.Contains(r.Services, service) || slices.Contains(r.Services, "*")
	if !d.Allowed {
		d.Reason = "the service is not listed"
	}
	return d
}
