package manifest

import (
	"fmt"

	"github.com/ccm-fleet/ccm/resources/engine"
)

// refNode is what reference checking needs of one resource.
type refNode struct {
	index     int // item index in ccm.resources
	typ       string
	name      string
	alias     string
	require   []string
	subscribe []string
}

func (n refNode) ref() string { return n.typ + "#" + n.name }

func (n refNode) label() string { return fmt.Sprintf("resources[%d] %s", n.index, n.ref()) }

// nodeFromPrepared reads a prepared resource's resolved common properties.
func nodeFromPrepared(index int, p *engine.Prepared) refNode {
	c := p.Properties.Common()
	return refNode{index: index, typ: p.Type.Name(), name: c.Name, alias: c.Alias, require: c.Require, subscribe: c.Subscribe}
}

// nodeFromMap reads expanded raw properties; values of the wrong shape are
// left for the engine's validation to report.
func nodeFromMap(index int, typ string, props map[string]any) refNode {
	n := refNode{index: index, typ: typ}
	n.name, _ = props["name"].(string)
	n.alias, _ = props["alias"].(string)
	n.require = stringList(props["require"])
	n.subscribe = stringList(props["subscribe"])
	return n
}

func stringList(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// refIndex maps "type#name" and "type#alias" to a position in the run order.
type refIndex map[string]int

// checkRefs indexes nodes by type#name and type#alias, failing on
// duplicates, and checks that every require and subscribe names a resource
// declared before the one that names it.
func checkRefs(nodes []refNode) (refIndex, error) {
	idx := make(refIndex, len(nodes))
	for i, n := range nodes {
		if j, dup := idx[n.ref()]; dup {
			return nil, dupError(n, n.ref(), nodes[j])
		}
		idx[n.ref()] = i
	}
	for i, n := range nodes {
		if n.alias == "" || n.alias == n.name {
			continue
		}
		key := n.typ + "#" + n.alias
		if j, dup := idx[key]; dup && j != i {
			return nil, dupError(n, key, nodes[j])
		}
		idx[key] = i
	}
	for i, n := range nodes {
		for _, list := range []struct {
			prop string
			refs []string
		}{{"require", n.require}, {"subscribe", n.subscribe}} {
			for _, ref := range list.refs {
				j, ok := idx[ref]
				switch {
				case !ok:
					return nil, invalidWith(ErrUnknownReference, "%s: %s %s: no resource in the manifest is %s", n.label(), list.prop, ref, ref)
				case j == i:
					return nil, invalidWith(ErrUnknownReference, "%s: %s %s: a resource cannot %s itself", n.label(), list.prop, ref, list.prop)
				case j > i:
					return nil, invalidWith(ErrUnknownReference, "%s: %s %s: %s is declared later (%s); resources run in declaration order", n.label(), list.prop, ref, ref, nodes[j].label())
				}
			}
		}
	}
	return idx, nil
}

func dupError(n refNode, key string, other refNode) error {
	return invalidWith(ErrDuplicate, "%s: %s is declared twice (also %s)", n.label(), key, other.label())
}
