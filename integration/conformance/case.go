package conformance

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Verdicts a case may have.
const (
	// Same: ccm-agent must observe exactly what CCM did.
	Same = "same"
	// Differs: a deliberate difference; Doc names the row of
	// docs/coming-from-ccm.md that says why and how to get CCM's behaviour.
	Differs = "differs"
	// CCMBug: CCM contradicts its own documentation and ccm-agent follows
	// the documentation; Doc quotes the documentation, Why says what CCM
	// does instead.
	CCMBug = "ccm-bug"
)

// Case is one row of the table.
type Case struct {
	Name string `yaml:"name"`
	// Files are written into the case's directory before the first run
	// (name: content); {{dir}} in a content is the directory.
	Files map[string]string `yaml:"files"`
	// Archives are .tar.gz files written into the directory (name: the
	// files they hold, name: content).
	Archives map[string]map[string]string `yaml:"archives"`
	// Serve: the directory is served over HTTP on loopback while the runs
	// run, at {{url}}.
	Serve bool `yaml:"serve"`
	// Runs are the command lines, run in order in the case's directory,
	// without the binary's name; {{dir}} is the directory.
	Runs [][]string `yaml:"runs"`
	// Ours replaces Runs for ccm-agent where its spelling differs (a
	// Differs case only).
	Ours [][]string `yaml:"ours"`
	// Watch are the files observed after each run.
	Watch []string `yaml:"watch"`
	// Document: the runs print one JSON document, compared as a value
	// without the top-level keys in Ignore (what depends on the machine
	// rather than on the program).
	Document bool     `yaml:"document"`
	Ignore   []string `yaml:"ignore"`
	// Verdict, Doc and Why: see the verdict constants. A Differs or CCMBug
	// case names the aspects that differ (DifferIn: exit, results, files,
	// document); every other aspect must still be CCM's. A CCMBug case
	// gives in Expect the contents its documentation shows for watched
	// files after the last run (name: content), which ccm-agent must write.
	Verdict  string            `yaml:"verdict"`
	DifferIn []string          `yaml:"differ_in"`
	Expect   map[string]string `yaml:"expect"`
	Doc      string            `yaml:"doc"`
	Why      string            `yaml:"why"`
}

// Result is what one resource's line said.
type Result struct {
	Ref     string `json:"ref"`
	Outcome string `json:"outcome"` // changed, stable, failed, skipped, would_change
	Noop    string `json:"noop,omitempty"`
}

// File is a watched file after a run.
type File struct {
	Mode    string `json:"mode,omitempty"`
	Owner   string `json:"owner,omitempty"`
	Content string `json:"content,omitempty"` // up to 256 bytes of text, else its sha256
	Absent  bool   `json:"absent,omitempty"`
}

// Observation is what one run did.
type Observation struct {
	Exit     int             `json:"exit"`
	Results  []Result        `json:"results,omitempty"`
	Files    map[string]File `json:"files,omitempty"`
	Document json.RawMessage `json:"document,omitempty"`
	// Output is the run's output, with the case's directory as {{dir}},
	// kept for reading a difference, never compared.
	Output string `json:"output"`
}

// Load reads the table.
func Load(path string) ([]Case, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("conformance table: %w", err)
	}
	var cases []Case
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&cases); err != nil {
		return nil, fmt.Errorf("conformance table %s: %w", path, err)
	}
	seen := map[string]bool{}
	for _, c := range cases {
		switch {
		case c.Name == "" || seen[c.Name]:
			return nil, fmt.Errorf("conformance table %s: case %q: empty or given twice", path, c.Name)
		case len(c.Runs) == 0:
			return nil, fmt.Errorf("conformance table %s: case %q has no runs", path, c.Name)
		case c.Verdict != Same && c.Verdict != Differs && c.Verdict != CCMBug:
			return nil, fmt.Errorf("conformance table %s: case %q: verdict %q is not same, differs or ccm-bug", path, c.Name, c.Verdict)
		case c.Verdict != Same && (c.Doc == "" || c.Why == ""):
			return nil, fmt.Errorf("conformance table %s: case %q: a %s case needs doc and why", path, c.Name, c.Verdict)
		case c.Verdict != Same && len(c.DifferIn) == 0, c.Verdict == Same && len(c.DifferIn) > 0:
			return nil, fmt.Errorf("conformance table %s: case %q: differ_in names what a differs or ccm-bug case differs in, and only there", path, c.Name)
		case c.Verdict == CCMBug && len(c.Expect) == 0:
			return nil, fmt.Errorf("conformance table %s: case %q: a ccm-bug case says what its documentation shows (expect)", path, c.Name)
		case c.Ours != nil && (c.Verdict == Same || len(c.Ours) != len(c.Runs)):
			return nil, fmt.Errorf("conformance table %s: case %q: ours is for a differing spelling, one per run", path, c.Name)
		}
		seen[c.Name] = true
	}
	return cases, nil
}

// runTimeout bounds one command of a case.
const runTimeout = 60 * time.Second

// Run runs the case's commands with bin in a new directory below base and
// observes each. ours selects the case's Ours spelling when it has one.
func Run(ctx context.Context, bin, base string, c Case, ours bool) ([]Observation, error) {
	dir, err := os.MkdirTemp(base, "case-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for name, content := range c.Files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(content, "{{dir}}", dir)), 0o644); err != nil {
			return nil, err
		}
	}
	for name, files := range c.Archives {
		if err := writeTarGz(filepath.Join(dir, name), files); err != nil {
			return nil, err
		}
	}
	url := ""
	if c.Serve {
		srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
		defer srv.Close()
		url = srv.URL
	}
	runs := c.Runs
	if ours && c.Ours != nil {
		runs = c.Ours
	}
	var obs []Observation
	for _, argv := range runs {
		args := make([]string, len(argv))
		for i, a := range argv {
			args[i] = strings.ReplaceAll(strings.ReplaceAll(a, "{{dir}}", dir), "{{url}}", url)
		}
		rctx, cancel := context.WithTimeout(ctx, runTimeout)
		cmd := exec.CommandContext(rctx, bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "NO_COLOR=1", "TERM=dumb")
		out, err := cmd.CombinedOutput()
		cancel()
		o := Observation{Output: strings.ReplaceAll(string(out), dir, "{{dir}}")}
		if url != "" {
			o.Output = strings.ReplaceAll(o.Output, url, "{{url}}")
		}
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			o.Exit = exit.ExitCode()
		case err != nil:
			return nil, fmt.Errorf("case %q: %s %s: %w", c.Name, bin, strings.Join(args, " "), err)
		}
		o.Results = results(o.Output)
		for i := range o.Results {
			if url != "" {
				o.Results[i].Ref = strings.ReplaceAll(o.Results[i].Ref, url, "{{url}}")
			}
		}
		if c.Document {
			o.Document = document(out, c.Ignore)
		}
		o.Files = watched(dir, c.Watch)
		obs = append(obs, o)
	}
	return obs, nil
}

var (
	// ccmLine is CCM's line for a resource: " WARN  file#/x changed ensure=present ... noop=Would have ..."
	// (a name may hold spaces: "exec#/bin/touch /x changed ...").
	ccmLine = regexp.MustCompile(`^\s*(?:\x1b\[[0-9;]*m)?\s*(?:DEBUG|INFO|WARN|ERROR)\s*(?:\x1b\[[0-9;]*m)?\s+(\S+?#.+?) (changed|stable|failed|skipped|refreshed)( .*)?$`)
	// notApplied is ccm-agent's line for a resource fail_on_error left out.
	notApplied = regexp.MustCompile(`^\s*WARN\s+\S+?#.+? not applied: `)
	// ourLine is ccm-agent's: "file#/x changed (present) in 1ms", "file#/x would change: MESSAGE"
	ourLine = regexp.MustCompile(`^(\S+?#.+?) (changed|stable|failed|skipped|refreshed|would change)((?:[ :]).*)?$`)
)

// results reads each resource's outcome from either binary's output.
func results(out string) []Result {
	var rs []Result
	for _, line := range strings.Split(out, "\n") {
		if notApplied.MatchString(line) {
			continue // ours names what fail_on_error left out; CCM prints nothing
		}
		if m := ccmLine.FindStringSubmatch(line); m != nil {
			r := Result{Ref: m[1], Outcome: m[2]}
			if _, noop, ok := strings.Cut(m[3], " noop="); ok {
				r.Outcome, r.Noop = "would_change", strings.TrimSpace(noop)
			}
			rs = append(rs, r)
			continue
		}
		if m := ourLine.FindStringSubmatch(line); m != nil {
			r := Result{Ref: m[1], Outcome: strings.ReplaceAll(m[2], " ", "_")}
			if r.Outcome == "would_change" {
				r.Noop = strings.TrimSpace(strings.TrimPrefix(m[3], ":"))
			}
			rs = append(rs, r)
		}
	}
	return rs
}

// document is the JSON document the output holds, re-encoded canonically,
// or nil.
func document(out []byte, ignore []string) json.RawMessage {
	start := bytes.IndexAny(out, "{[")
	if start < 0 {
		return nil
	}
	var v any
	if err := json.NewDecoder(bytes.NewReader(out[start:])).Decode(&v); err != nil {
		return nil
	}
	if m, ok := v.(map[string]any); ok {
		for _, k := range ignore {
			delete(m, k)
		}
	}
	b, _ := json.Marshal(v)
	return b
}

// watched observes the named files.
func watched(dir string, names []string) map[string]File {
	if len(names) == 0 {
		return nil
	}
	m := map[string]File{}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(dir, n)
		fi, err := os.Lstat(p)
		if err != nil {
			m[n] = File{Absent: true}
			continue
		}
		f := File{Mode: fmt.Sprintf("%04o", fi.Mode().Perm())}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			f.Owner = name(strconv.Itoa(int(st.Uid)), true) + ":" + name(strconv.Itoa(int(st.Gid)), false)
		}
		if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			if len(b) <= 256 && utf8.Valid(b) {
				f.Content = string(b)
			} else {
				sum := sha256.Sum256(b)
				f.Content = "sha256:" + hex.EncodeToString(sum[:])
			}
		} else if fi.IsDir() {
			f.Content = "(directory)"
		}
		m[n] = f
	}
	return m
}

func name(id string, isUser bool) string {
	if isUser {
		if u, err := user.LookupId(id); err == nil {
			return u.Username
		}
		return id
	}
	if g, err := user.LookupGroupId(id); err == nil {
		return g.Name
	}
	return id
}

// Provenance says where a recording came from.
type Provenance struct {
	Commit   string `json:"commit"`
	Version  string `json:"version"`
	Recorded string `json:"recorded"`
	Command  string `json:"command"`
}

// Recording is what CCM did for each case, by name.
type Recording struct {
	CCM   Provenance               `json:"ccm"`
	Cases map[string][]Observation `json:"cases"`
}

// LoadRecording reads a recording.
func LoadRecording(path string) (Recording, error) {
	var r Recording
	b, err := os.ReadFile(path)
	if err != nil {
		return r, fmt.Errorf("conformance recording: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("conformance recording %s: %w", path, err)
	}
	return r, nil
}

// writeTarGz writes a .tar.gz holding files (name: content, mode 0644).
func writeTarGz(path string, files map[string]string) error {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		body := files[n]
		hdr := &tar.Header{Name: n, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(1700000000, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
