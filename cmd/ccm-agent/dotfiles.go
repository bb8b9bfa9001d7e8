package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"regexp"
	"syscall"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/continuous"
	"github.com/ccm-fleet/ccm/manifest"
)

// As CCM's command line does, "ensure" reads hierarchical data from
// ./.hiera (or --hiera FILE, or CCM_HIERA_DATA) and extra environment
// variables from ./.env, when they exist.
const (
	defaultHieraFile = ".hiera"
	dotEnvFile       = ".env"
	// maxDotEnv bounds the .env file read.
	maxDotEnv = 1 << 20
)

// dataFlags are the data sources of "ensure" CCM reads by default.
type dataFlags struct {
	hiera   string
	readEnv bool
	// warn receives the line that says why a working-directory file was
	// skipped; nil is standard error.
	warn io.Writer
	// log receives the warnings CCM logs about the data (an unknown
	// annotation); nil discards them.
	log *slog.Logger
}

func (d *dataFlags) register(cmd *fisk.CmdClause) {
	cmd.Flag("hiera", "Hierarchical data file (data, hierarchy, overrides) resolved with this host's facts for data.* in templates; skipped when absent").Default(defaultHieraFile).Envar("CCM_HIERA_DATA").PlaceHolder("FILE").StringVar(&d.hiera)
	cmd.Flag("read-env", "Read KEY=VALUE lines of ./.env into the environment templates see").Default("true").BoolVar(&d.readEnv)
}

// data resolves the hiera file with facts; a file that does not exist
// gives no data, as in CCM.
func (d *dataFlags) data(facts map[string]any) (map[string]any, error) {
	if d.hiera == "" {
		return nil, nil
	}
	if isRemoteRef(d.hiera) {
		// A URL is fetched, pinned, or refused: never skipped.
		return hieraData(d.hiera, facts, d.log)
	}
	if d.hiera != defaultHieraFile {
		// A file the operator named (--hiera, CCM_HIERA_DATA) is read as given.
		if _, err := os.Stat(d.hiera); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return hieraData(d.hiera, facts, d.log)
	}
	body, err := d.readTrusted(defaultHieraFile, manifest.DefaultMaxBytes)
	if body == nil || err != nil {
		return nil, err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("--hiera %s: %w", defaultHieraFile, err)
	}
	m, err := manifest.Parse(body, manifest.ParseOptions{WorkingDir: cwd})
	if err != nil {
		return nil, fmt.Errorf("--hiera %s: %w", defaultHieraFile, err)
	}
	return resolveHiera(defaultHieraFile, m, facts, d.log)
}

// hieraData resolves the hierarchical data of --hiera with facts: a file,
// or an http(s) URL pinned with #sha256= (see hieraRef).
func hieraData(path string, facts map[string]any, log *slog.Logger) (map[string]any, error) {
	m, err := hieraRef{flag: "--hiera", requirePin: true}.load(context.Background(), path)
	if err != nil {
		return nil, err
	}
	name := path
	if u, err := continuous.ParseDataURL(path); err == nil && isRemoteRef(path) {
		name = u.String() // no password
	}
	return resolveHiera(name, m, facts, log)
}

// resolveHiera resolves the data of m, read from path, with facts; the
// annotations it does not understand are logged to log, as CCM does.
func resolveHiera(path string, m *manifest.Manifest, facts map[string]any, log *slog.Logger) (map[string]any, error) {
	manifest.LogAnnotationWarnings(log, m.AnnotationWarnings())
	r, err := m.Resolve(manifest.RunOptions{Facts: facts})
	if err != nil {
		return nil, fmt.Errorf("--hiera %s: %w", path, err)
	}
	if r.Data == nil {
		return map[string]any{}, nil
	}
	return r.Data, nil
}

// dotEnvLine is one KEY=VALUE line of a .env file, the value optionally
// quoted.
var dotEnvLine = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)="?(.*?)"?$`)

// environ is the process environment plus the KEY=VALUE lines of ./.env
// (they win) when readEnv is set.
func (d *dataFlags) environ() ([]string, error) {
	env := os.Environ()
	if !d.readEnv {
		return env, nil
	}
	body, err := d.readTrusted(dotEnvFile, maxDotEnv)
	if body == nil || err != nil {
		return env, err
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		if m := dotEnvLine.FindStringSubmatch(sc.Text()); m != nil {
			env = append(env, m[1]+"="+m[2])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", dotEnvFile, err)
	}
	return env, nil
}

// readTrusted reads name from the working directory when this process may
// trust it: a regular file (not a symbolic link) owned by root or by the
// invoking user and not writable by group or others. Root running "ensure"
// in a directory another user controls must not take that user's data or
// environment into its templates. A file that is absent gives nil; an
// untrusted one gives nil and one line on d.warn saying why it was skipped.
// The checks are made on the opened file, so the file judged is the file
// read. More than limit bytes is an error.
func (d *dataFlags) readTrusted(name string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, syscall.ELOOP):
		d.skipped(name, "it is a symbolic link")
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("./%s: %w", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("./%s: %w", name, err)
	}
	if why := untrusted(fi, os.Geteuid()); why != "" {
		d.skipped(name, why)
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("./%s: %w", name, err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("./%s: larger than %d bytes", name, limit)
	}
	return body, nil
}

// untrusted says why a working-directory file described by fi may not be
// read by a process whose effective user is euid, or "" when it may.
func untrusted(fi fs.FileInfo, euid int) string {
	if !fi.Mode().IsRegular() {
		return "it is not a regular file"
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "its owner cannot be read"
	}
	if int(st.Uid) != 0 && int(st.Uid) != euid {
		return fmt.Sprintf("it is owned by uid %d, neither root nor the invoking user (uid %d)", st.Uid, euid)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Sprintf("it is writable by group or others (mode %04o)", perm)
	}
	return ""
}

// skipped says on one line why a working-directory file was not read.
func (d *dataFlags) skipped(name, why string) {
	w := d.warn
	if w == nil {
		w = os.Stderr
	}
	fmt.Fprintf(w, "ccm-agent: warning: skipped ./%s: %s\n", name, why)
}
