package schemacheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Canary is the key Spoil plants; a validator's refusal of a spoiled
// document names it.
const Canary = "ccm_offline_canary_7f3a"

// closedProxy is where any HTTP(S) fetch by the validator goes: nothing
// listens on the discard port of loopback, so a schema that needs the
// network fails as it would offline.
const closedProxy = "http://127.0.0.1:9"

// Pythons lists the Python interpreters that can import jsonschema
// (Debian's python3-jsonschema installs it for /usr/bin/python3; a python3
// earlier on PATH may have its own), each once.
func Pythons() []string {
	candidates := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	var out []string
	seen := map[string]bool{}
	for _, c := range candidates {
		real, err := filepath.EvalSymlinks(c)
		if err != nil || seen[real] {
			continue
		}
		seen[real] = true
		if exec.Command(c, "-c", "import jsonschema").Run() == nil {
			out = append(out, c)
		}
	}
	return out
}

// Validate runs `python -m jsonschema -i DOC... SCHEMA` with each document
// in a file of dir, and returns the validator's exit status and combined
// output; err is for a validator that could not be run at all.
func Validate(python, dir, schema string, docs ...[]byte) (int, string, error) {
	args := []string{"-m", "jsonschema"}
	for i, d := range docs {
		f := filepath.Join(dir, fmt.Sprintf("doc-%d.json", i))
		if err := os.WriteFile(f, d, 0o600); err != nil {
			return 0, "", fmt.Errorf("schemacheck: %w", err)
		}
		args = append(args, "-i", f)
	}
	cmd := exec.Command(python, append(args, schema)...)
	cmd.Env = append(os.Environ(), "PYTHONWARNINGS=ignore::DeprecationWarning",
		"http_proxy="+closedProxy, "https_proxy="+closedProxy,
		"HTTP_PROXY="+closedProxy, "HTTPS_PROXY="+closedProxy, "no_proxy=", "NO_PROXY=")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out), nil
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out), nil
	default:
		return 0, string(out), fmt.Errorf("schemacheck: %s %s: %w", python, schema, err)
	}
}

// ErrNotJSONContainer is returned by Spoil for a document that is neither
// a JSON object nor a JSON array.
var ErrNotJSONContainer = errors.New("not a JSON object or array")

// Spoil returns doc with Canary planted where no published schema allows
// it: a key of the top object, or an element of the top array.
func Spoil(doc []byte) ([]byte, error) {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, fmt.Errorf("schemacheck: spoil: %w", err)
	}
	switch t := v.(type) {
	case map[string]any:
		t[Canary] = true
	case []any:
		v = append(t, map[string]any{Canary: true})
	default:
		return nil, fmt.Errorf("schemacheck: spoil: %w", ErrNotJSONContainer)
	}
	return json.Marshal(v)
}

// Refs lists every $ref value in a decoded schema.
func Refs(v any) []string {
	var out []string
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if s, ok := x.(string); ok && k == "$ref" {
				out = append(out, s)
				continue
			}
			out = append(out, Refs(x)...)
		}
	case []any:
		for _, x := range t {
			out = append(out, Refs(x)...)
		}
	}
	return out
}
