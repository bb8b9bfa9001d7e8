package manifest

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

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

// jetEntries renders the resources_jet_file with [[ ]] delimiters over
// the variables and functions jet() offers (templates.Env.RenderJetTo:
// facts/Facts, data/Data, environ/Environ where the environment is exposed,
// lookup, file/readFile, template, kvGet, and the caller's functions such
// as registrations()), as CCM renders it with its
// template environment, then parses the YAML list it renders as
// ccm.resources.
func (m *Manifest) jetEntries(env *templates.Env) ([]*entry, error) {
	if m.workingDir == "" {
		return nil, invalidf("ccm.resources_jet_file: the manifest has no directory to read %s from", m.jetFile)
	}
	path := filepath.Join(m.workingDir, m.jetFile)
	src, err := readBounded(path)
	if err != nil {
		return nil, invalidWith(err, "ccm.resources_jet_file: %v", err)
	}
	var out bytes.Buffer
	lw := &limitedWriter{w: &out, left: maxJetFile}
	err = env.RenderJetTo(lw, m.jetFile, string(src), "[[", "]]")
	if err == nil {
		err = lw.err
	}
	if err != nil {
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

// limitedWriter fails a render that writes more than left bytes; err
// remembers it, since Jet does not stop on every failed write.
type limitedWriter struct {
	w    io.Writer
	left int
	err  error
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if len(p) > l.left {
		l.err = fmt.Errorf("renders more than %d bytes", maxJetFile)
		return 0, l.err
	}
	l.left -= len(p)
	return l.w.Write(p)
}
