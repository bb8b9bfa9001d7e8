package policy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/nats-io/nkeys"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/trust/scope"
)

// MaxRegistrationServices bounds a signer's registration.services.
const MaxRegistrationServices = 1000

var validServiceName = regexp.MustCompile(`^[a-zA-Z][a-zA-Z\d_-]*$`)

// MaxRegistrationPublishers bounds the policy's registration.publishers.
const MaxRegistrationPublishers = 100000

// RegistrationScope says which services the manifests of a signer may
// make a host register (register_when_stable entries). At the policy's
// top level it may also pin the keys readers on this host accept for
// other hosts' entries (Publishers).
type RegistrationScope struct {
	// Services are service names; "*" allows every service.
	Services []string `json:"services" yaml:"services"`
	// Publishers pin, for a host, the keys whose entries naming that host
	// this host's readers (registrations()) accept: a pinned host is
	// trusted for these keys only, whatever the node registry or the
	// host's binding say. Top level only.
	Publishers []RegistrationPublisher `json:"publishers,omitempty" yaml:"publishers"`
}

// RegistrationPublisher pins one host's registration key.
type RegistrationPublisher struct {
	// Host is the host's identity, as its entries name it.
	Host string `json:"host" yaml:"host"`
	// PublicKey is the public nkeys user key it signs its entries with.
	PublicKey string `json:"public_key" yaml:"public_key"`
}

// RegistrationPublishers are the keys the policy pins for each host (nil
// without registration.publishers).
func (p *Policy) RegistrationPublishers() map[string][]string {
	if p == nil || p.Registration == nil || len(p.Registration.Publishers) == 0 {
		return nil
	}
	out := make(map[string][]string, len(p.Registration.Publishers))
	for _, pub := range p.Registration.Publishers {
		out[pub.Host] = append(out[pub.Host], pub.PublicKey)
	}
	return out
}

// validate checks the names and the pinned keys.
func (r *RegistrationScope) validate() error {
	if r == nil {
		return nil
	}
	if len(r.Publishers) > MaxRegistrationPublishers {
		return fmt.Errorf("registration.publishers: %d, the limit is %d", len(r.Publishers), MaxRegistrationPublishers)
	}
	for i, p := range r.Publishers {
		if err := protocol.ValidateIdentity(p.Host); err != nil {
			return fmt.Errorf("registration.publishers[%d].host: %v", i, err)
		}
		if !nkeys.IsValidPublicUserKey(p.PublicKey) {
			return fmt.Errorf("registration.publishers[%d].public_key %.60q: not an nkeys user public key", i, p.PublicKey)
		}
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
