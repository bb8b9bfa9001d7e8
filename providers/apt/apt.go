package apt

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
)

// statusFormat is dpkg-query's output format: package, version,
// architecture and dpkg status, on one line. There is no shell, so it is
// passed without the quotes the seed's command line shows.
const statusFormat = "${Package} ${Version} ${Architecture} ${db:Status-Status}"

// installArgs start every apt-get install; --force-confold keeps existing
// configuration files on upgrade.
var installArgs = []string{"install", "-y", "-q", "-o", "DPkg::Options::=--force-confold"}

// Provider manages packages with dpkg and apt. Every command it runs holds
// the lock shared by the process's package providers.
type Provider struct {
	runner runner.Runner
	log    *slog.Logger
	// lock is held while a package command runs
	lock *sync.Mutex
}

// Name returns "apt".
func (p *Provider) Name() string { return ProviderName }

// Status runs dpkg-query -W and reports the package present, at its
// version, only when dpkg's status is "installed". Any other status
// (config-files, half-installed, half-configured, unpacked, not-installed,
// ...) and a non-zero exit (dpkg knows no such package) report absent, so
// that apt-get install repairs broken installations. The dpkg status is kept
// in Metadata.Extended["status"].
func (p *Provider) Status(ctx context.Context, pkg string) (*protocol.PackageState, error) {
	if err := pkgtype.ValidateName(pkg); err != nil {
		return nil, err
	}
	p.lock.Lock()
	defer p.lock.Unlock()
	res, err := p.runLocked(ctx, nil, "dpkg-query", "-W", "-f="+statusFormat, "--", pkg)
	if err != nil {
		return nil, err
	}
	return parseStatus(pkg, res)
}

func parseStatus(pkg string, res *runner.Result) (*protocol.PackageState, error) {
	absent := func(status string) *protocol.PackageState {
		return &protocol.PackageState{
			CommonState: protocol.NewCommonState(protocol.TypePackage, pkg, pkgtype.EnsureAbsent),
			Metadata: &protocol.PackageMetadata{
				Name: pkg, Provider: ProviderName, Extended: map[string]any{"status": status},
			},
		}
	}
	if res.ExitCode != 0 {
		return absent("unknown"), nil
	}
	// One line of four fields separated by single spaces; a package dpkg
	// knows but never installed has an empty version.
	fields := strings.Split(strings.TrimRight(string(res.Stdout), "\n"), " ")
	if len(fields) != 4 || fields[0] == "" || fields[3] == "" {
		return nil, fmt.Errorf("%w: dpkg-query printed %q for %s, expected package, version, architecture and status (for a package installed for several architectures name one, e.g. %s:amd64)",
			pkgtype.ErrUnexpectedOutput, boundedOutput(res.Stdout), pkg, pkg)
	}
	name, version, arch, status := fields[0], fields[1], fields[2], fields[3]
	if status != "installed" {
		return absent(status), nil
	}
	if version == "" {
		return nil, fmt.Errorf("%w: dpkg-query reports %s installed without a version", pkgtype.ErrUnexpectedOutput, pkg)
	}
	return &protocol.PackageState{
		CommonState: protocol.NewCommonState(protocol.TypePackage, pkg, version),
		Metadata: &protocol.PackageMetadata{
			Name: name, Version: version, Arch: arch, Provider: ProviderName,
			Extended: map[string]any{"status": status},
		},
	}, nil
}

// Install runs apt-get install for pkg: unversioned for present, at the
// candidate apt-cache policy reports for latest, and at a specific version
// with --allow-downgrades otherwise.
func (p *Provider) Install(ctx context.Context, pkg, version string) error {
	if err := checkArgs(pkg, version); err != nil {
		return err
	}
	p.lock.Lock()
	defer p.lock.Unlock()

	args := append([]string(nil), installArgs...)
	switch version {
	case "", pkgtype.EnsurePresent:
		args = append(args, "--", pkg)
	case pkgtype.EnsureLatest:
		candidate, err := p.candidateLocked(ctx, pkg)
		if err != nil {
			return err
		}
		p.log.Debug("latest candidate", "package", pkg, "candidate", candidate)
		args = append(args, "--", pkg+"="+candidate)
	default:
		args = append(args, "--allow-downgrades", "--", pkg+"="+version)
	}
	res, err := p.runLocked(ctx, nil, "apt-get", args...)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return failed(res, "apt-get", args...)
	}
	return nil
}

// Upgrade installs pkg at version (see Install).
func (p *Provider) Upgrade(ctx context.Context, pkg, version string) error {
	return p.Install(ctx, pkg, version)
}

// Downgrade installs pkg at version (see Install); --allow-downgrades lets
// apt-get go down.
func (p *Provider) Downgrade(ctx context.Context, pkg, version string) error {
	return p.Install(ctx, pkg, version)
}

// Uninstall runs apt-get remove, which keeps configuration files.
func (p *Provider) Uninstall(ctx context.Context, pkg string) error {
	if err := pkgtype.ValidateName(pkg); err != nil {
		return err
	}
	p.lock.Lock()
	defer p.lock.Unlock()
	args := []string{"-q", "-y", "remove", "--", pkg}
	res, err := p.runLocked(ctx, nil, "apt-get", args...)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return failed(res, "apt-get", args...)
	}
	return nil
}

// VersionCmp compares two Debian versions (CompareVersions); the Debian
// ordering has no notion of trailing zeroes, so ignoreTrailingZeroes has no
// effect.
func (p *Provider) VersionCmp(a, b string, _ bool) (int, error) {
	return CompareVersions(a, b)
}

// candidateLocked asks apt-cache policy for the version apt would install.
// apt-cache runs in the C locale so its labels are not translated.
func (p *Provider) candidateLocked(ctx context.Context, pkg string) (string, error) {
	args := []string{"policy", "--", pkg}
	res, err := p.runLocked(ctx, []string{"LC_ALL=C"}, "apt-cache", args...)
	if err != nil {
		return "", err
	}
	if res.ExitCode != 0 {
		return "", failed(res, "apt-cache", args...)
	}
	return parseCandidate(pkg, res.Stdout)
}

// parseCandidate finds the Candidate: line of apt-cache policy output.
func parseCandidate(pkg string, out []byte) (string, error) {
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "Candidate:")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if v == "(none)" || v == "" {
			return "", fmt.Errorf("%w for %s: apt-cache policy reports Candidate: (none)", ErrNoCandidate, pkg)
		}
		if err := pkgtype.ValidateVersion(v); err != nil {
			return "", fmt.Errorf("%w: apt-cache policy candidate for %s: %w", pkgtype.ErrUnexpectedOutput, pkg, err)
		}
		return v, nil
	}
	return "", fmt.Errorf("%w for %s: apt-cache policy knows no such package", ErrNoCandidate, pkg)
}

// checkArgs validates a package name and, unless it is present or latest,
// a version.
func checkArgs(pkg, version string) error {
	if err := pkgtype.ValidateName(pkg); err != nil {
		return err
	}
	if version == pkgtype.EnsureAbsent {
		return resources.Invalidf("package %s: cannot install version %q", pkg, version)
	}
	if version != "" && pkgtype.IsVersion(version) {
		return pkgtype.ValidateVersion(version)
	}
	return nil
}

func boundedOutput(b []byte) string {
	const max = 256
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}
