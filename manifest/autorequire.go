package manifest

import (
	"slices"

	"github.com/ccm-fleet/ccm/resources/catalog"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// autorequire makes every resource that names a user or group the
// manifest manages (a file's owner and group, a user's groups: see
// catalog.AccountRefs) require that user or group, as Puppet's
// autorequire does, and moves a user or group declared later to just
// before the first resource naming it, so it runs first. Everything else
// keeps its declaration order. Requires the manifest writes are checked
// afterwards against the new order (checkRefs).
func autorequire(prepared []*engine.Prepared, nodes []refNode) {
	// Each pass moves one resource earlier; a resource moves at most once
	// per resource before it, so n*n passes always end.
	for range len(nodes)*len(nodes) + 1 {
		if !autorequirePass(prepared, nodes) {
			return
		}
	}
}

// autorequirePass adds the implicit requires and moves the first account
// resource found after a resource naming it; it reports whether it moved
// one.
func autorequirePass(prepared []*engine.Prepared, nodes []refNode) bool {
	pos := make(map[string]int, len(nodes))
	for i, n := range nodes {
		pos[n.ref()] = i
		if n.alias != "" {
			pos[n.typ+"#"+n.alias] = i
		}
	}
	for i, p := range prepared {
		for _, ref := range catalog.AccountRefs(p.Properties) {
			j, ok := pos[ref]
			if !ok || j == i {
				continue
			}
			if !slices.Contains(nodes[i].require, ref) {
				nodes[i].require = append(slices.Clone(nodes[i].require), ref)
			}
			if j > i {
				moveBefore(prepared, j, i)
				moveBefore(nodes, j, i)
				return true
			}
		}
	}
	return false
}

// moveBefore moves s[from] to position to (to < from), shifting the rest.
func moveBefore[T any](s []T, from, to int) {
	v := s[from]
	copy(s[to+1:from+1], s[to:from])
	s[to] = v
}
