package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/catalog"
)

// Bundle limits.
const (
	// MaxBundleBytes bounds the total size of a bundle's files.
	MaxBundleBytes = 8 << 20
	// MaxBundleFiles bounds the number of files in a bundle.
	MaxBundleFiles = 4096
)

// Bundle is a manifest with the files its relative sources name, as carried
// in a fleet request's manifest field.
type Bundle struct {
	// Manifest is the manifest document as a JSON object.
	Manifest json.RawMessage `json:"manifest"`
	// Files maps slash-separated paths relative to the manifest's directory
	// to their contents (base64 in JSON).
	Files map[string][]byte `json:"files,omitempty"`
}

// NewBundle reads m's relative file and scaffold sources below its working
// directory and returns the bundle. Absolute sources (files on the target
// host) and URLs are left as they are. A source whose path is templated
// bundles the literal directories before its first template. Paths with
// "..", symlinks leading out of the directory, symlinked directories and
// more than MaxBundleBytes or MaxBundleFiles are errors wrapping ErrBundle.
func NewBundle(m *Manifest) (*Bundle, error) {
	b := &Bundle{Manifest: m.Document(), Files: map[string][]byte{}}
	roots, err := m.sourceRoots()
	if err != nil {
		return nil, err
	}
	if len(roots) == 0 {
		return b, nil
	}
	if m.workingDir == "" {
		return nil, fmt.Errorf("%w: sources %v are relative but the manifest has no working directory", ErrBundle, roots)
	}
	root, err := os.OpenRoot(m.workingDir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBundle, err)
	}
	defer root.Close()
	fsys := root.FS()
	total := 0
	for _, r := range roots {
		err := fs.WalkDir(fsys, r, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return nil
			}
			if _, done := b.Files[p]; done {
				return nil
			}
			// Stat follows a symlink, and fails when it leads out of the root.
			fi, err := fs.Stat(fsys, p)
			if err != nil {
				return err
			}
			switch {
			case fi.IsDir():
				return fmt.Errorf("%s: symlinked directories are not bundled", p)
			case !fi.Mode().IsRegular():
				return fmt.Errorf("%s: not a regular file", p)
			case total+int(fi.Size()) > MaxBundleBytes || len(b.Files) >= MaxBundleFiles:
				return fmt.Errorf("the sources exceed %d bytes or %d files", MaxBundleBytes, MaxBundleFiles)
			}
			body, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			if total += len(body); total > MaxBundleBytes {
				return fmt.Errorf("the sources exceed %d bytes", MaxBundleBytes)
			}
			b.Files[p] = body
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%w: source %s: %w", ErrBundle, r, err)
		}
	}
	return b, nil
}

// sourceRoots lists the slash-separated local paths the manifest's
// relative sources need, from entries and their defaults.
func (m *Manifest) sourceRoots() ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(e *entry, v any) error {
		src, ok := v.(string)
		if !ok || src == "" || strings.Contains(src, "://") || filepath.IsAbs(src) {
			return nil
		}
		p, err := literalPrefix(src)
		if err != nil {
			return fmt.Errorf("%w: %s: source %q: %w", ErrBundle, e.label(), src, err)
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
		return nil
	}
	if err := m.applyRoots(add); err != nil {
		return nil, err
	}
	for _, e := range m.entries {
		// The catalog says which types' source property names a local
		// file or directory that a bundle carries.
		if t, ok := catalog.Lookup(e.typ); !ok || !t.BundleSource {
			continue
		}
		sets := []map[string]any{e.props, asObject(e.splat)}
		if e.defaults != nil {
			sets = append(sets, e.defaults.props, asObject(e.defaults.splat))
		}
		for _, props := range sets {
			if err := add(e, props["source"]); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// applyRoots adds what runs beside the manifest: the directory of each
// relative child manifest of an apply resource (its own sources and
// children resolve there), the child file itself when it sits beside the
// manifest, and the resources_jet_file.
func (m *Manifest) applyRoots(add func(*entry, any) error) error {
	if m.jetFile != "" {
		if err := add(&entry{typ: "ccm", name: "resources_jet_file"}, m.jetFile); err != nil {
			return err
		}
	}
	for _, e := range m.entries {
		name, ok := e.name.(string)
		if e.typ != protocol.TypeApply || !ok {
			continue
		}
		root := name
		if dir := path.Dir(filepath.ToSlash(name)); dir != "." {
			root = dir
		}
		if err := add(e, root); err != nil {
			return err
		}
	}
	return nil
}

// asObject returns a literal "*" object, nil for a template or none.
func asObject(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// literalPrefix returns the clean local path of src, or for a templated src
// the directories before the first templated element.
func literalPrefix(src string) (string, error) {
	src = filepath.ToSlash(src)
	if strings.Contains(src, "{{") || strings.Contains(src, "${") {
		parts := strings.Split(src, "/")
		var lit []string
		for _, part := range parts {
			if strings.Contains(part, "{{") || strings.Contains(part, "${") {
				break
			}
			lit = append(lit, part)
		}
		if len(lit) == 0 {
			return "", errors.New("a templated source must start with a literal directory to be bundled")
		}
		src = strings.Join(lit, "/")
	}
	p := path.Clean(src)
	if !filepath.IsLocal(p) || p == "." {
		return "", errors.New("must stay inside the manifest's directory")
	}
	return p, nil
}

// Unpack writes the bundle's files into dir (see WriteFiles) and parses the
// manifest with WorkingDir = dir.
func (b *Bundle) Unpack(dir string) (*Manifest, error) {
	if len(b.Manifest) == 0 {
		return nil, fmt.Errorf("%w: no manifest", ErrBundle)
	}
	if err := b.WriteFiles(dir); err != nil {
		return nil, err
	}
	return Parse(b.Manifest, ParseOptions{WorkingDir: dir})
}

// WriteFiles writes the bundle's files into dir (created 0700 when
// missing; an existing dir must be empty), without parsing the manifest:
// a caller that parsed it already gives the parsed value InDir(dir). Every
// path must be local and clean; files are written 0600 through an os.Root,
// so nothing lands outside dir.
func (b *Bundle) WriteFiles(dir string) error {
	total := 0
	for p, body := range b.Files {
		if p == "" || !filepath.IsLocal(p) || path.Clean(p) != p || strings.Contains(p, `\`) {
			return fmt.Errorf("%w: file path %q must be a clean relative path inside the manifest directory", ErrBundle, p)
		}
		total += len(body)
	}
	if total > MaxBundleBytes || len(b.Files) > MaxBundleFiles {
		return fmt.Errorf("%w: the files exceed %d bytes or %d files", ErrBundle, MaxBundleBytes, MaxBundleFiles)
	}
	if err := freshDir(dir); err != nil {
		return fmt.Errorf("%w: %w", ErrBundle, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBundle, err)
	}
	defer root.Close()
	for _, p := range sortedKeys(b.Files) {
		if d := path.Dir(p); d != "." {
			if err := root.MkdirAll(d, 0o700); err != nil {
				return fmt.Errorf("%w: %s: %w", ErrBundle, p, err)
			}
		}
		if err := root.WriteFile(p, b.Files[p], 0o600); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrBundle, p, err)
		}
	}
	return nil
}

// freshDir makes dir (0700) or checks that an existing dir is an empty
// directory and restricts it to 0700.
func freshDir(dir string) error {
	err := os.Mkdir(dir, 0o700)
	if err == nil || !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s is not empty", dir)
	}
	return os.Chmod(dir, 0o700)
}
