package filetype

import (
	"path/filepath"
	"strings"

	"github.com/ccm-fleet/ccm/resources"
)

// Ensure values of the file type. Status may also report EnsureSymlink or
// EnsureSpecial for a path that exists as something the type does not manage.
const (
	// EnsurePresent asks for a regular file; it is the default.
	EnsurePresent = "present"
	// EnsureAbsent asks for nothing to exist at the path.
	EnsureAbsent = "absent"
	// EnsureDirectory asks for a directory.
	EnsureDirectory = "directory"
	// EnsureSymlink is reported by Status when the path is a symbolic link.
	EnsureSymlink = "symlink"
	// EnsureSpecial is reported by Status when the path is a FIFO, socket or
	// device.
	EnsureSpecial = "special"
)

// maxOwner bounds owner and group names.
const maxOwner = 256

// Properties are the properties of a file resource; Name is the absolute,
// clean path of the file or directory.
type Properties struct {
	resources.CommonProperties
	// Content is the file's content. Nil leaves the content of an existing
	// file unmanaged (a missing file is created empty); a pointer to ""
	// manages the file as empty.
	Content *string `json:"content,omitempty"`
	// Contents is another spelling of Content, accepted as CCM accepts
	// it; Validate merges it into Content and clears it.
	Contents *string `json:"contents,omitempty"`
	// Source is a local file whose bytes become the content; a relative
	// path is resolved against the apply's working directory.
	Source string `json:"source,omitempty"`
	// Owner is the user owning the file (a name, or a numeric uid).
	Owner string `json:"owner,omitempty"`
	// Group is the group owning the file (a name, or a numeric gid).
	Group string `json:"group,omitempty"`
	// Mode is the permission bits in octal, e.g. "0644".
	Mode Mode `json:"mode,omitempty"`
	// Force allows ensure absent to remove a non-empty directory; with any
	// other ensure Validate refuses it, as CCM does.
	Force bool `json:"force,omitempty"`
	// Watch, in an assignment, has the agent watch the file and apply the
	// assignment again as soon as the file changes (see the agent's
	// watcher); it changes nothing about one apply.
	Watch bool `json:"watch,omitempty"`
}

var _ resources.Properties = (*Properties)(nil)

// Validate normalises the properties (default ensure, contents merged into
// content, mode in four-digit form) and checks them. Errors wrap
// resources.ErrInvalid and name the property at fault.
func (p *Properties) Validate() error {
	if p.Ensure == "" {
		p.Ensure = EnsurePresent
	}
	if err := p.ValidateCommon(); err != nil {
		return err
	}
	switch p.Ensure {
	case EnsurePresent, EnsureAbsent, EnsureDirectory:
	default:
		return resources.InvalidField("ensure", "%q is not one of present, absent, directory", p.Ensure)
	}
	if err := ValidatePath(p.Name); err != nil {
		return err
	}
	if p.Ensure == EnsureAbsent && p.Name == "/" {
		return resources.InvalidField("name", "%s", ErrRemoveRoot)
	}
	if p.Force && p.Ensure != EnsureAbsent {
		return resources.InvalidField("force", "true is only valid with ensure absent, not %s", p.Ensure)
	}
	if err := p.mergeContents(); err != nil {
		return err
	}
	if err := p.validateContent(); err != nil {
		return err
	}
	return p.validateAttributes()
}

// ManagesContent reports whether the content of the file is managed: true
// when content or source is set.
func (p *Properties) ManagesContent() bool {
	return p.Content != nil || p.Source != ""
}

// ValidatePath checks that name is an absolute, clean path without NUL
// bytes; the error wraps resources.ErrInvalid and names the property.
func ValidatePath(name string) error {
	switch {
	case strings.ContainsRune(name, 0):
		return resources.InvalidField("name", "path contains a NUL byte")
	case !filepath.IsAbs(name):
		return resources.InvalidField("name", "%q is not an absolute path", name)
	case filepath.Clean(name) != name:
		return resources.InvalidField("name", "%q is not a clean path (expected %q)", name, filepath.Clean(name))
	}
	return nil
}

func (p *Properties) mergeContents() error {
	if p.Contents == nil {
		return nil
	}
	if p.Content != nil && *p.Content != *p.Contents {
		return resources.InvalidField("contents", "content and contents are both set and differ; use content")
	}
	p.Content, p.Contents = p.Contents, nil
	return nil
}

func (p *Properties) validateContent() error {
	if p.Content != nil && p.Source != "" {
		return resources.InvalidField("source", "content and source are mutually exclusive")
	}
	if strings.ContainsRune(p.Source, 0) {
		return resources.InvalidField("source", "path contains a NUL byte")
	}
	if p.Ensure == EnsureDirectory && p.ManagesContent() {
		return resources.InvalidField("content", "content and source apply only to ensure present, not directory")
	}
	return nil
}

func (p *Properties) validateAttributes() error {
	required := p.Ensure != EnsureAbsent
	for _, a := range []struct{ name, value string }{{"owner", p.Owner}, {"group", p.Group}, {"mode", string(p.Mode)}} {
		switch {
		case a.value == "" && required:
			return resources.InvalidFieldPredicate(a.name, "is required for ensure %s", p.Ensure)
		case len(a.value) > maxOwner:
			return resources.InvalidFieldPredicate(a.name, "is longer than %d bytes", maxOwner)
		case strings.ContainsRune(a.value, 0):
			return resources.InvalidFieldPredicate(a.name, "contains a NUL byte")
		case a.value != strings.TrimSpace(a.value):
			return resources.InvalidField(a.name, "%q has leading or trailing space", a.value)
		}
	}
	if p.Mode != "" {
		m, err := NormaliseMode(string(p.Mode))
		if err != nil {
			return err
		}
		p.Mode = Mode(m)
	}
	return nil
}
