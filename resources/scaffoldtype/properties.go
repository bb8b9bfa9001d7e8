package scaffoldtype

import (
	"net/url"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/kballard/go-shellquote"

	"github.com/ccm-fleet/ccm/resources"
)

const (
	// EnsurePresent renders the source into the target.
	EnsurePresent = "present"
	// EnsureAbsent removes the files the scaffold manages, and the target
	// when that leaves it empty.
	EnsureAbsent = "absent"

	// EngineGo selects Go text/template with Sprig, default delimiters {{ }}.
	EngineGo = "go"
	// EngineJet selects the Jet template language, default delimiters [[ ]].
	EngineJet = "jet"
)

// Properties are the properties of a scaffold resource. Name is the target
// directory: absolute and canonical.
type Properties struct {
	resources.CommonProperties
	// Source is the template directory, absolute or relative to the working
	// directory; a URL (with a scheme) is kept as given.
	Source string `json:"source"`
	// Engine is go or jet; empty means jet.
	Engine string `json:"engine,omitempty"`
	// SkipEmpty leaves out files whose rendered output is only white space.
	SkipEmpty bool `json:"skip_empty,omitempty"`
	// LeftDelimiter replaces the engine's left template delimiter; set it
	// together with RightDelimiter.
	LeftDelimiter string `json:"left_delimiter,omitempty"`
	// RightDelimiter replaces the engine's right template delimiter; set it
	// together with LeftDelimiter.
	RightDelimiter string `json:"right_delimiter,omitempty"`
	// Purge removes files from the target that the source does not render.
	Purge bool `json:"purge,omitempty"`
	// Post lists single-key maps of a glob, matched against the base name of
	// each rendered file, to a command run on that file; {} in the command
	// stands for the file's path, which is appended when {} is absent.
	Post []map[string]string `json:"post,omitempty"`
	// Data, when set, replaces the data templates see (data.*) for this
	// scaffold, as CCM's data property does; facts stay available. Its
	// string values are templates like every property.
	Data map[string]any `json:"data,omitempty"`
}

var _ resources.Properties = (*Properties)(nil)

// Validate sets the defaults (ensure present, engine jet) and checks the
// properties. Every failure wraps resources.ErrInvalid and names the property.
func (p *Properties) Validate() error {
	if p.Ensure == "" {
		p.Ensure = EnsurePresent
	}
	if p.Engine == "" {
		p.Engine = EngineJet
	}
	if err := p.ValidateCommon(); err != nil {
		return err
	}
	if err := validateTarget(p.Name); err != nil {
		return err
	}
	switch p.Ensure {
	case EnsurePresent, EnsureAbsent:
	default:
		return resources.InvalidField("ensure", "%q is not one of %s or %s", p.Ensure, EnsurePresent, EnsureAbsent)
	}
	switch {
	case p.Source == "":
		return resources.InvalidFieldPredicate("source", "is required")
	case strings.ContainsRune(p.Source, 0):
		return resources.InvalidFieldPredicate("source", "contains a NUL byte")
	}
	switch p.Engine {
	case EngineGo, EngineJet:
	default:
		return resources.InvalidField("engine", "%q is not one of %s or %s", p.Engine, EngineGo, EngineJet)
	}
	if (p.LeftDelimiter == "") != (p.RightDelimiter == "") {
		return resources.Invalidf("properties left_delimiter and right_delimiter must be set together")
	}
	return validatePost(p.Post)
}

func validateTarget(name string) error {
	switch {
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return resources.InvalidField("name", "%q contains a control character", name)
	case !filepath.IsAbs(name):
		return resources.InvalidField("name", "%q is not an absolute path", name)
	case filepath.Clean(name) != name:
		return resources.InvalidField("name", "%q is not canonical (it should be %q)", name, filepath.Clean(name))
	case name == "/":
		return resources.InvalidField("name", "the root directory cannot be a scaffold target")
	}
	return nil
}

func validatePost(post []map[string]string) error {
	for i, entry := range post {
		if len(entry) != 1 {
			return resources.InvalidField("post", "entry %d must map exactly one glob to one command, it has %d", i+1, len(entry))
		}
		for glob, command := range entry {
			switch {
			case strings.TrimSpace(glob) == "":
				return resources.InvalidField("post", "entry %d has an empty glob", i+1)
			case strings.TrimSpace(command) == "":
				return resources.InvalidField("post", "entry %d (%q) has an empty command", i+1, glob)
			case strings.ContainsRune(glob, 0) || strings.ContainsRune(command, 0):
				return resources.InvalidField("post", "entry %d (%q) contains a NUL byte", i+1, glob)
			case strings.ContainsRune(glob, '/'):
				return resources.InvalidField("post", "glob %q contains /, but globs match file base names", glob)
			}
			if _, err := filepath.Match(glob, "x"); err != nil {
				return resources.InvalidField("post", "glob %q: %v", glob, err)
			}
			words, err := shellquote.Split(command)
			if err != nil {
				return resources.InvalidField("post", "command %q: %v", command, err)
			}
			if len(words) == 0 {
				return resources.InvalidField("post", "command %q has no program", command)
			}
		}
	}
	return nil
}

// IsURL reports whether source names a URL (it has a scheme) rather than a
// local path.
func IsURL(source string) bool {
	u, err := url.Parse(source)
	return err == nil && u.Scheme != ""
}

// ResolveSource returns source as the provider should see it: a URL or an
// absolute path unchanged, a relative path joined to workingDir, or made
// absolute against the process's working directory when workingDir is empty.
func ResolveSource(source, workingDir string) string {
	if IsURL(source) || filepath.IsAbs(source) {
		return source
	}
	if workingDir != "" {
		return filepath.Join(workingDir, source)
	}
	if abs, err := filepath.Abs(source); err == nil {
		return abs
	}
	return source
}
