package manifest

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/CloudyKit/jet/v6"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// maxJetFile bounds a resources_jet_file template and what it renders.
const maxJetFile = DefaultMaxBytes

// decodeJetFile reads ccm.resources_jet_file: a file name in the
// manifest's own directory (CCM's rule), exclusive with ccm.resources.
func (m *Manifest) decodeJetFile(c map[string]any) error {
	v, ok := c["resources_jet_file"]
	if !ok || v == nil {
		return nil
	}
	s, ok := v.(string)
	if !ok {
		return invalidf("ccm.resources_jet_file: expected a string, got %s", kind(v))
	}
	if r, ok := c["resources"]; ok && r != nil {
		return invalidf("ccm.resources_jet_file and ccm.resources cannot be used together")
	}
	if s == "" || !filepath.IsLocal(s) {
		return invalidf("ccm.resources_jet_file: %q must name a file in the manifest's directory", s)
	}
	m.jetFile = s
	return nil
}

// jetEntries renders the resources_jet_file with the resolved data, the
// facts and (when exposed) the environment as Data, Facts and Environ, the
// lookup() function, and [[ ]] delimiters, then parses the YAML list it
// renders as ccm.resources. The caller's functions (registrations())
// are there too.
func (m *Manifest) jetEntries(env *templates.Env, environ bool) ([]*entry, error) {
	if m.workingDir == "" {
		return nil, invalidf("ccm.resources_jet_file: the manifest has no directory to read %s from", m.jetFile)
	}
	path := filepath.Join(m.workingDir, m.jetFile)
	src, err := readBounded(path)
	if err != nil {
		return nil, invalidWith(err, "ccm.resources_jet_file: %v", err)
	}
	set := jet.NewSet(jet.NewInMemLoader(), jet.WithDelims("[[", "]]"), jet.WithSafeWriter(func(w io.Writer, b []byte) { _, _ = w.Write(b) }))
	for name, f := range env.JetCallerFuncs() {
		set.AddGlobalFunc(name, f)
	}
	set.AddGlobalFunc("lookup", env.JetLookup())
	tpl, err := set.Parse(m.jetFile, string(src))
	if err != nil {
		return nil, invalidWith(err, "ccm.resources_jet_file %s: %v", m.jetFile, err)
	}
	vars := jet.VarMap{}
	vars.Set("Data", env.Data())
	vars.Set("Facts", env.Facts())
	if environ {
		em := map[string]string{}
		for _, kv := range os.Environ() {
			if k, v, ok := strings.Cut(kv, "="); ok {
				em[k] = v
			}
		}
		vars.Set("Environ", em)
	}
	var out bytes.Buffer
	if err := tpl.Execute(&limitedWriter{w: &out, left: maxJetFile}, vars, nil); err != nil {
		return nil, invalidWith(err, "ccm.resources_jet_file %s: %v", m.jetFile, err)
	}
	if strings.TrimSpace(out.String()) == "" {
		return nil, invalidf("ccm.resources_jet_file %s: the template rendered nothing", m.jetFile)
	}
	var list []any
	if _, err := protocol.DecodeStrict(out.Bytes(), &list, protocol.Limits{MaxBytes: maxJetFile}); err != nil {
		return nil, invalidWith(err, "ccm.resources_jet_file %s: the rendered resources: %s", m.jetFile, decodeMessage(err))
	}
	var entries []*entry
	for i, item := range list {
		es, err := parseItem(i, item, m.types)
		if err != nil {
			return nil, err
		}
		entries = append(entries, es...)
	}
	return entries, nil
}

// readBounded reads a file of at most maxJetFile bytes.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxJetFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > maxJetFile {
		return nil, fmt.Errorf("%s: more than %d bytes", path, maxJetFile)
	}
	return b, nil
}

// limitedWriter fails a render that writes more than left bytes.
type limitedWriter struct {
	w    io.Writer
	left int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if len(p) > l.left {
		return 0, fmt.Errorf("renders more than %d bytes", maxJetFile)
	}
	l.left -= len(p)
	return l.w.Write(p)
}
