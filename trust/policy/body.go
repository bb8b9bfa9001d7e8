package policy

import (
	"errors"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// ManifestTempPattern names the directories a request's manifest bundle
// is unpacked into, below os.TempDir().
const ManifestTempPattern = "ccm-manifest-"

// Body is what a request asks for, parsed once: the resource of an ensure
// request, or a manifest request's bundle and manifest.
type Body struct {
	// Ensure is the resource of an ensure request, nil for a manifest.
	Ensure *engine.Spec
	// Bundle and Manifest are a manifest request's, parsed without
	// writing any file.
	Bundle   *manifest.Bundle
	Manifest *manifest.Manifest
	// Resources are the declared resources as the policy sees them, in
	// order (names as written, before templates).
	Resources []Resource
}

// ParseBody decodes what a request asks for, once: the ensure resource's
// properties (strictly: exact keys the type has, no duplicates, valid
// UTF-8; types are the registry's), or the manifest bundle and its
// manifest (parsed without writing any file). Errors are protocol errors
// (bad_request) naming the field.
func ParseBody(req *protocol.FleetRequest, types *resources.Registry) (*Body, error) {
	if req.Ensure != nil {
		if b, ok := parseDecoded(req.Ensure, types); ok {
			return b, nil
		}
		props, err := req.Ensure.PropertiesMap()
		if err != nil {
			return nil, err
		}
		t, err := types.Type(req.Ensure.Type)
		if err != nil {
			return nil, protocol.NewError(protocol.CodeBadRequest, "field \"ensure.type\": %s", err)
		}
		// Exact keys only: a key in another case or spelling is not
		// the property it resembles.
		if parent, key, bad := resources.PropertyKeys(t).Unknown(props); bad {
			return nil, protocol.UnknownKeyError(joinField("ensure.properties", parent), key)
		}
		spec := &engine.Spec{Type: req.Ensure.Type, Properties: props}
		return &Body{Ensure: spec, Resources: []Resource{SpecResource(spec)}}, nil
	}
	return ParseManifest(req.Manifest)
}

// parseDecoded decodes the properties of ensure straight into its type's
// value, once, when none of them can be a template (a template is
// resolved before its property is decoded). It reports false when they
// may hold one, or do not decode: the map is then decoded, as before,
// and names what is wrong in the same words.
func parseDecoded(ensure *protocol.EnsureRequest, types *resources.Registry) (*Body, bool) {
	if engine.MayHoldTemplate(ensure.Properties) {
		return nil, false
	}
	t, err := types.Type(ensure.Type)
	if err != nil {
		return nil, false
	}
	props, err := engine.DecodeJSON(t, ensure.Properties)
	if err != nil {
		return nil, false
	}
	c := props.Common()
	spec := &engine.Spec{Type: ensure.Type, Decoded: props}
	return &Body{Ensure: spec, Resources: []Resource{{Type: ensure.Type, Name: c.Name, Provider: c.Provider}}}, true
}

// ParseManifest decodes a manifest bundle (a request's or an
// assignment's), once, and its manifest, parsed without writing any file,
// as ParseBody does for a manifest request.
func ParseManifest(raw []byte) (*Body, error) {
	bundle, err := decodeBundle(raw)
	if err != nil {
		return nil, protocol.Wrapf(protocol.CodeBadRequest, err, "manifest bundle: %s", protocol.AsError(err).Message)
	}
	m, err := manifest.Parse(bundle.Manifest, manifest.ParseOptions{})
	if err != nil {
		return nil, protocol.Wrapf(protocol.CodeBadRequest, err, "%s", ManifestMessage(err))
	}
	return ManifestBody(bundle, m), nil
}

// ManifestBody is the body of a manifest already parsed from bundle (an
// assignment's object store bundle, read into memory).
func ManifestBody(bundle *manifest.Bundle, m *manifest.Manifest) *Body {
	declared, providers := m.Declared(), m.Providers()
	res := make([]Resource, len(declared))
	for i, d := range declared {
		res[i] = Resource{Type: d.Type, Name: d.Name, Provider: providers[i]}
	}
	return &Body{Bundle: bundle, Manifest: m, Resources: res}
}

// joinField is parent.child, or parent when child is "".
func joinField(parent, child string) string {
	if child == "" {
		return parent
	}
	return parent + "." + child
}

// SpecResource is an ensure resource as the policy sees it: its type,
// name and literal provider ("*" when not a string).
func SpecResource(spec *engine.Spec) Resource {
	r := Resource{Type: spec.Type}
	r.Name, _ = spec.Properties["name"].(string)
	if p, ok := spec.Properties["provider"]; ok && p != nil {
		s, isString := p.(string)
		if !isString {
			s = "*"
		}
		r.Provider = s
	}
	return r
}

// decodeBundle strictly decodes a request's manifest body. Its size is
// bounded by the request's (max_request_bytes); Unpack bounds the files
// again (manifest.MaxBundleBytes) before writing any.
func decodeBundle(raw []byte) (*manifest.Bundle, error) {
	var b manifest.Bundle
	if err := protocol.DecodeJSONStrict(raw, &b); err != nil {
		return nil, err
	}
	if len(b.Manifest) == 0 || string(b.Manifest) == "null" {
		return nil, protocol.NewError(protocol.CodeBadRequest, "field %q is required", "manifest")
	}
	return &b, nil
}

// ManifestMessage is err's text, said to be about the manifest: an error
// about the document or its bundle names the manifest already, any other
// (about one resource of it) gets "manifest: " in front.
func ManifestMessage(err error) string {
	if errors.Is(err, manifest.ErrDocument) || errors.Is(err, manifest.ErrBundle) {
		return err.Error()
	}
	return "manifest: " + err.Error()
}
