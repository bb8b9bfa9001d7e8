package facts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"strings"

	"github.com/shirou/gopsutil/v4/mem"

	"github.com/ccm-fleet/ccm/protocol"
)

// ErrInvalid is returned for a custom fact file or k=v pair that cannot be used.
var ErrInvalid = errors.New("invalid facts")

// maxFactsFile bounds the custom facts file.
const maxFactsFile = 1 << 20

// Options say what to add to the gathered facts.
type Options struct {
	// Identity overrides the identity fact, which defaults to the hostname.
	Identity string
	// File is a YAML or JSON file with a map of custom facts.
	File string
	// Pairs are k=v custom facts, applied after the file.
	Pairs []string
	// Site, when set, is the site fact (protocol.SiteFact), applied after
	// the custom facts; a custom site fact that names another site is an
	// error. Without it a custom site fact is kept, and must be a valid
	// site name too (see protocol.ValidateSite).
	Site string
}

// Gather collects the standard facts of this host and merges the custom ones.
func Gather(ctx context.Context, opts Options) (map[string]any, error) {
	f := map[string]any{}
	info, err := hostInfo(ctx)
	if err != nil && info == nil {
		return nil, fmt.Errorf("facts: host info: %w", err)
	}
	hostname, _ := os.Hostname()
	if info.Hostname != "" {
		hostname = info.Hostname
	}
	f["hostname"] = hostname
	f["identity"] = hostname
	f["os"] = info.PlatformFamily
	f["platform"] = info.Platform
	f["platform_version"] = info.PlatformVersion
	f["kernel"] = info.KernelVersion
	f["arch"] = info.KernelArch
	if f["arch"] == "" {
		f["arch"] = runtime.GOARCH
	}
	f["cpus"] = runtime.NumCPU()
	f["virtualization"] = info.VirtualizationSystem
	f["host"] = map[string]any{"info": toMap(info)}
	memory := map[string]any{"virtual": map[string]any{}, "swap": swapFacts(ctx)}
	if vm, err := mem.VirtualMemoryWithContext(ctx); err == nil {
		f["memory_mb"] = int(vm.Total / (1 << 20))
		memory["virtual"] = toMap(vm)
	}
	f["memory"] = memory
	f["cpu"] = cpuFacts(ctx)
	f["network"] = networkFacts(ctx)
	f["partition"] = partitionFacts(ctx)
	if err := Merge(f, opts); err != nil {
		return nil, err
	}
	return f, nil
}

// Merge applies the custom facts of opts (file, then pairs, then site, then
// identity) to f. The site fact, wherever it comes from, is checked with
// protocol.ValidateSite.
func Merge(f map[string]any, opts Options) error {
	if opts.File != "" {
		custom, err := ReadFile(opts.File)
		if err != nil {
			return err
		}
		for k, v := range custom {
			f[k] = v
		}
	}
	for _, kv := range opts.Pairs {
		k, v, err := ParsePair(kv)
		if err != nil {
			return err
		}
		f[k] = v
	}
	if err := mergeSite(f, opts.Site); err != nil {
		return err
	}
	if opts.Identity != "" {
		f["identity"] = opts.Identity
	}
	return nil
}

// mergeSite sets the site fact of f to site, or checks the custom one when
// site is empty.
func mergeSite(f map[string]any, site string) error {
	custom, has := f[protocol.SiteFact]
	if site == "" {
		if !has {
			return nil
		}
		name, ok := custom.(string)
		if !ok {
			return fmt.Errorf("%w: fact %s must be a site name, not %T", ErrInvalid, protocol.SiteFact, custom)
		}
		if err := protocol.ValidateSite(name); err != nil {
			return fmt.Errorf("%w: fact %s: %w", ErrInvalid, protocol.SiteFact, err)
		}
		return nil
	}
	if err := protocol.ValidateSite(site); err != nil {
		return fmt.Errorf("%w: site: %w", ErrInvalid, err)
	}
	if has && custom != site {
		return fmt.Errorf("%w: custom fact %s=%v conflicts with the configured site %q", ErrInvalid, protocol.SiteFact, custom, site)
	}
	f[protocol.SiteFact] = site
	return nil
}

var keyRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// ParsePair splits a k=v fact; the key must be a plain identifier.
func ParsePair(kv string) (string, string, error) {
	k, v, ok := strings.Cut(kv, "=")
	if !ok {
		return "", "", fmt.Errorf("%w: fact %q must look like key=value", ErrInvalid, kv)
	}
	if !keyRe.MatchString(k) {
		return "", "", fmt.Errorf("%w: fact key %q must start with a letter or _ and contain only letters, digits, _ and -", ErrInvalid, k)
	}
	return k, v, nil
}

// ReadFile reads a YAML or JSON file holding a map of facts, at most 1 MiB,
// with protocol.DecodeStrict (exact keys; duplicate keys, anchors and
// aliases and invalid UTF-8 are refused). Errors wrap ErrInvalid and name
// the file and the key as written.
func ReadFile(path string) (map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: facts file: %w", ErrInvalid, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFactsFile+1))
	if err != nil {
		return nil, fmt.Errorf("%w: facts file %s: %w", ErrInvalid, path, err)
	}
	if len(b) > maxFactsFile {
		return nil, fmt.Errorf("%w: facts file %s is larger than %d bytes", ErrInvalid, path, maxFactsFile)
	}
	var m map[string]any
	if _, err := protocol.DecodeStrict(b, &m, protocol.Limits{MaxBytes: maxFactsFile}); err != nil {
		var pe *protocol.Error
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%w: facts file %s: %s", ErrInvalid, path, pe.KeyMessage())
		}
		return nil, fmt.Errorf("%w: facts file %s: %w", ErrInvalid, path, err)
	}
	for k := range m {
		if !keyRe.MatchString(k) {
			return nil, fmt.Errorf("%w: facts file %s: key %q must start with a letter or _ and contain only letters, digits, _ and -", ErrInvalid, path, k)
		}
	}
	return m, nil
}

func toMap(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		return map[string]any{}
	}
	var m map[string]any
	if err := protocol.DecodeJSONStrict(b, &m); err != nil {
		return map[string]any{}
	}
	return m
}
