package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"

	"github.com/choria-io/fisk"

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
	if _, err := os.Stat(d.hiera); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return hieraData(d.hiera, facts)
}

// hieraData resolves a hierarchical data file with facts.
func hieraData(path string, facts map[string]any) (map[string]any, error) {
	m, err := manifest.Load(path)
	if err != nil {
		return nil, fmt.Errorf("--hiera %s: %w", path, err)
	}
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
	f, err := os.Open(dotEnvFile)
	if errors.Is(err, fs.ErrNotExist) {
		return env, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dotEnvFile, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, maxDotEnv))
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
