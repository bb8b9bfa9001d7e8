package orchestrator

import "github.com/ccm-fleet/ccm/manifest"

// declaredResources lists a bundle's resources as its manifest declares
// them, in order, names unexpanded, for grouping. A manifest that does not
// parse here yields none: the agents judge it, and an event no declaration
// matches is grouped under its own name.
func declaredResources(b *manifest.Bundle) []DeclaredResource {
	if b == nil {
		return nil
	}
	m, err := manifest.Parse(b.Manifest, manifest.ParseOptions{})
	if err != nil {
		return nil
	}
	var out []DeclaredResource
	for _, d := range m.Declared() {
		out = append(out, DeclaredResource{Type: d.Type, Name: d.Name})
	}
	return out
}
