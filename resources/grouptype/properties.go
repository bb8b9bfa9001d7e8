package grouptype

import (
	"github.com/ccm-fleet/ccm/resources"
)

// Properties are the properties of a group resource; Name is the group's
// name.
type Properties struct {
	resources.CommonProperties
	// GID is the group's id; nil lets groupadd choose one and leaves an
	// existing group's alone.
	GID *ID `json:"gid,omitempty"`
	// System makes a new group in the system range; an existing group is
	// left where it is.
	System bool `json:"system,omitempty"`
	// Members are user names in the group; nil leaves the members alone.
	Members []string `json:"members,omitempty"`
	// Membership is minimum (the default: add Members, keep others) or
	// inclusive (exactly Members).
	Membership string `json:"membership,omitempty"`
}

var _ resources.Properties = (*Properties)(nil)

// Validate sets the defaults (ensure present, membership minimum), then
// checks the common properties, ensure, the name, the gid and the
// members. Failures wrap resources.ErrInvalid and name the property.
func (p *Properties) Validate() error {
	if p.Ensure == "" {
		p.Ensure = EnsurePresent
	}
	if err := p.ValidateCommon(); err != nil {
		return err
	}
	if err := ValidateEnsure(p.Ensure); err != nil {
		return err
	}
	if err := ValidateName("name", p.Name); err != nil {
		return err
	}
	if err := ValidateID("gid", p.GID); err != nil {
		return err
	}
	if err := ValidateNames("members", p.Members); err != nil {
		return err
	}
	return ValidateMembership(&p.Membership)
}
