package manifest

import (
	"reflect"
	"sync"

	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// maxDecodedNames bounds the resources one entry keeps decoded (names
// made from facts may change from run to run).
const maxDecodedNames = 1024

// decodedCache keeps, for one entry of a parsed manifest, the typed
// properties of each of its resources whose planned properties hold no
// template, decoded once: a later run of the same manifest (an
// assignment's revision, run on its schedule) whose resource plans the
// same properties prepares a copy of that value instead of decoding
// them again. Templated properties depend on each run's facts and data:
// they are expanded, then decoded, every run.
type decodedCache struct {
	mu     sync.Mutex
	byName map[string]decodedProps
}

// decodedProps is one resource's planned properties and their typed
// value, decoded but not validated; the value is only ever copied out.
type decodedProps struct {
	planned map[string]any
	value   resources.Properties
}

// spec is the engine spec of the planned resource p. When its properties
// hold no template and its entry keeps decoded values, Decoded is set to
// a copy of their typed value, decoded on the first run that planned
// these same properties; otherwise the engine expands and decodes them.
func (p plannedSpec) spec(reg *resources.Registry) engine.Spec {
	s := engine.Spec{Type: p.entry.typ, Properties: p.props}
	c := p.entry.decoded
	if c == nil || engine.ValueMayHoldTemplate(p.props) {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.byName[p.name]
	if !ok || !reflect.DeepEqual(d.planned, p.props) {
		t, err := reg.Type(p.entry.typ)
		if err != nil {
			return s
		}
		v, err := engine.DecodeMap(t, p.props)
		if err != nil {
			// Prepare decodes them again and names what is wrong.
			return s
		}
		if c.byName == nil || len(c.byName) >= maxDecodedNames {
			c.byName = map[string]decodedProps{}
		}
		d = decodedProps{planned: p.props, value: v}
		c.byName[p.name] = d
	}
	s.Decoded = engine.CloneProperties(d.value)
	return s
}
