package resources

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Registration bounds.
const (
	// MaxRegistrations bounds the register_when_stable entries of one
	// resource.
	MaxRegistrations = 64
	// MaxRegistrationAnnotations bounds the annotations of one entry.
	MaxRegistrationAnnotations = 64
)

// Registration is one register_when_stable entry as CCM writes it: an
// endpoint of a service that the continuous agent publishes while the
// resource is stable (applied without failing, every health check OK) and
// withdraws when it fails. The engine expands its templates with the rest
// of the resource's properties; the registration package checks the values
// (names, address, ranges) when the entry is published.
type Registration struct {
	// Cluster, Service and Protocol name the service.
	Cluster  string `json:"cluster"`
	Service  string `json:"service"`
	Protocol string `json:"protocol"`
	// Address is the endpoint's IP address or host name.
	Address string `json:"address"`
	// Port is the endpoint's port, 0 for none.
	Port RegistrationNumber `json:"port,omitempty"`
	// Priority is between 1 and 255, lower preferred.
	Priority RegistrationNumber `json:"priority,omitempty"`
	// TTL is how long the entry lives after its last publication ("10m",
	// "never"); empty for none.
	TTL string `json:"ttl,omitempty"`
	// Annotations are free key/value metadata.
	Annotations map[string]string `json:"annotations,omitempty"`
	// Sensitive is set by the engine when the entry's templates read data
	// marked sensitive or its values hold such data; it is never written.
	Sensitive bool `json:"-"`
}

// RegistrationNumber is a port or priority: a number, or a string of
// decimal digits (what a template such as "{{ data.port }}" expands to).
type RegistrationNumber int

// UnmarshalJSON accepts a JSON number or a string holding one.
func (n *RegistrationNumber) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case float64:
		if x != float64(int(x)) {
			return fmt.Errorf("%v is not a whole number", x)
		}
		*n = RegistrationNumber(x)
	case string:
		i, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil {
			return fmt.Errorf("%.40q is not a number", x)
		}
		*n = RegistrationNumber(i)
	default:
		return fmt.Errorf("expected a number, got %s", string(b))
	}
	return nil
}

// validateRegistrations checks the bounds of a resource's entries.
func validateRegistrations(rs []Registration) error {
	if len(rs) > MaxRegistrations {
		return InvalidField("register_when_stable", "%d entries, the limit is %d", len(rs), MaxRegistrations)
	}
	for i, r := range rs {
		if r.Service == "" || r.Cluster == "" || r.Protocol == "" || r.Address == "" {
			return InvalidField(fmt.Sprintf("register_when_stable[%d]", i), "cluster, service, protocol and address are required")
		}
		if len(r.Annotations) > MaxRegistrationAnnotations {
			return InvalidField(fmt.Sprintf("register_when_stable[%d]", i), "%d annotations, the limit is %d", len(r.Annotations), MaxRegistrationAnnotations)
		}
	}
	return nil
}
