package engine_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
)

// probeProps is the property set of the test-only "file" stand-in type.
type probeProps struct {
	resources.CommonProperties
	Content  string `json:"content,omitempty"`
	Count    int    `json:"count,omitempty"`
	Password string `json:"password,omitempty"`
	Fail     bool   `json:"fail,omitempty"`
}

func (p *probeProps) Validate() error {
	if p.Count < 0 {
		return resources.Invalidf("property count: must not be negative")
	}
	return p.ValidateCommon()
}

func (p *probeProps) Redacted() any {
	c := *p
	if c.Password != "" {
		c.Password = "[redacted]"
	}
	return &c
}

// probeType records the applies it sees.
type probeType struct {
	applied []*resources.ApplyContext
}

func (*probeType) Name() string                        { return "file" }
func (*probeType) DefaultEnsure() string               { return "present" }
func (*probeType) NewProperties() resources.Properties { return &probeProps{} }

func (t *probeType) Apply(_ context.Context, ac *resources.ApplyContext, props resources.Properties, p resources.Provider) (*resources.Outcome, error) {
	t.applied = append(t.applied, ac)
	pp := props.(*probeProps)
	if _, ok := p.(*probeProvider); !ok {
		return nil, fmt.Errorf("wrong provider %T", p)
	}
	st := &protocol.FileState{CommonState: protocol.NewCommonState("file", pp.Name, pp.Ensure)}
	if pp.Fail {
		return &resources.Outcome{State: st}, fmt.Errorf("file %s: %w", pp.Name, resources.ErrDesiredStateFailed)
	}
	out := &resources.Outcome{State: st, Changed: true, Diff: &protocol.Diff{
		Content: "-old\n+" + pp.Content + "\n",
		Changes: []protocol.Change{{Field: "mode", From: "0600", To: "0644"}, {Field: "download", To: pp.Content}},
	}}
	if ac.Noop {
		out.NoopMessage = "Would have created the file"
	}
	return out, nil
}

type probeProvider struct{}

func (*probeProvider) Name() string { return "probe" }

type probeFactory struct {
	name      string
	manage    bool
	instances *int
}

func (f probeFactory) Type() string { return "file" }
func (f probeFactory) Name() string { return f.name }
func (f probeFactory) IsManageable(map[string]any, resources.Properties) (bool, int, error) {
	return f.manage, 1, nil
}
func (f probeFactory) New() (resources.Provider, error) {
	if f.instances != nil {
		*f.instances++
	}
	if f.name == "broken" {
		return nil, errors.New("cannot start")
	}
	return &probeProvider{}, nil
}
