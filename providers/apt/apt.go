package apt

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
)

// statusFormat is dpkg-query's output format: package, version,
// architecture and dpkg status, on one line. There is no shell, so it is
// passed as one argument without the quotes a shell command line needs.
const statusFormat = "${Package} ${Version} ${Architecture} ${db:Status-Status}"

// patternOnly makes apt read a command-line argument as a package name,
// never as a regular expression or glob when no package has that exact
// name (apt reads "nginx-." as a regex selecting every nginx-x package
// otherwise); it still reads an argument starting with ? or ~ as an apt
// pattern, which a valid name never does (pkgtype.ValidateName).
const patternOnly = "APT::Cmd::Pattern-Only=true"

// installArgs start every apt-get install: --no-remove makes apt refuse a
// transaction that would remove a package (apt reads "name-" as "remove
// name"); --force-confold keeps existing configuration files on upgrade.
var installArgs = []string{"install", "-y", "-q", "--no-remove", "-o", patternOnly, "-o", "DPkg::Options::=--force-confold"}

// Provider manages packages with dpkg and apt. Every command it runs holds
// the lock shared by the process's package providers.
type Provider struct {
	runner runner.Runner
	log    *slog.Logger
	// lock is held while a package command runs
	lock *sync.Mutex
	// lockTimeout is how long apt-get waits for the dpkg lock.
	lockTimeout time.Duration
	// lockPaths are dpkg's lock files (DpkgLocks).
	lockPaths []string
}

var _ pkgtype.Resolver = (*Provider)(nil)

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
				Name: pkg, Version: pkgtype.EnsureAbsent, Provider: ProviderName, Extended: map[string]any{"status": status},
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
	if name != pkg && name+":"+arch != pkg {
		return nil, fmt.Errorf("%w: dpkg-query answered for package %q when asked for %s", pkgtype.ErrUnexpectedOutput, name, pkg)
	}
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

// Install runs apt-get install for pkg once apt-cache policy shows that a
// package has exactly that name (else an error wrapping
// pkgtype.ErrNoSuchPackage, and nothing is installed): unversioned for
// present, at the candidate apt-cache policy reports for latest, and at a
// specific version with --allow-downgrades otherwise. apt-get runs with
// APT::Cmd::Pattern-Only and --no-remove, so the name can only ever mean
// that one package.
func (p *Provider) Install(ctx context.Context, pkg, version string) error {
	if err := checkArgs(pkg, version); err != nil {
		return err
	}
	p.lock.Lock()
	defer p.lock.Unlock()

	pol, err := p.policy(ctx, pkg)
	if err != nil {
		return err
	}
	if err := pol.offers(pkg, version); err != nil {
		return err
	}
	candidate := pol.candidate
	args := append([]string(nil), installArgs...)
	switch version {
	case "", pkgtype.EnsurePresent:
		if candidate == "" {
			return fmt.Errorf("%w for %s: apt-cache policy reports Candidate: (none)", ErrNoCandidate, pkg)
		}
		args = append(args, "--", pkg)
	case pkgtype.EnsureLatest:
		if candidate == "" {
			return fmt.Errorf("%w for %s: apt-cache policy reports Candidate: (none)", ErrNoCandidate, pkg)
		}
		resources.Logger(ctx, p.log).Debug("latest candidate", "package", pkg, "candidate", candidate)
		args = append(args, "--", pkg+"="+candidate)
	default:
		args = append(args, "--allow-downgrades", "--", pkg+"="+version)
	}
	return p.aptGet(ctx, pkg, args)
}

// Resolve reports whether Install(ctx, pkg, version) could start, asking
// apt-cache policy as Install does and changing nothing: an error wrapping
// pkgtype.ErrNoSuchPackage when apt has no package of exactly that name,
// one wrapping ErrNoCandidate when present or latest has no candidate.
// apt-cache only reads, so it runs without the package lock: noops of
// several resources (or simulated hosts) do not queue behind one another.
func (p *Provider) Resolve(ctx context.Context, pkg, version string) error {
	if err := checkArgs(pkg, version); err != nil {
		return err
	}
	pol, err := p.policy(ctx, pkg)
	if err != nil {
		return err
	}
	if pol.candidate == "" && (version == "" || version == pkgtype.EnsurePresent || version == pkgtype.EnsureLatest) {
		return fmt.Errorf("%w for %s: apt-cache policy reports Candidate: (none)", ErrNoCandidate, pkg)
	}
	return pol.offers(pkg, version)
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

// Uninstall runs apt-get remove, which keeps configuration files, once
// dpkg-query shows a package of exactly that name installed (else an
// error wrapping pkgtype.ErrNoSuchPackage); apt-get runs with
// APT::Cmd::Pattern-Only.
func (p *Provider) Uninstall(ctx context.Context, pkg string) error {
	if err := pkgtype.ValidateName(pkg); err != nil {
		return err
	}
	p.lock.Lock()
	defer p.lock.Unlock()
	res, err := p.runLocked(ctx, nil, "dpkg-query", "-W", "-f="+statusFormat, "--", pkg)
	if err != nil {
		return err
	}
	st, err := parseStatus(pkg, res)
	if err != nil {
		return err
	}
	if st.Ensure == pkgtype.EnsureAbsent {
		return fmt.Errorf("%w %s: dpkg has no package of exactly that name installed", pkgtype.ErrNoSuchPackage, pkg)
	}
	return p.aptGet(ctx, pkg, []string{"-q", "-y", "-o", patternOnly, "remove", "--", pkg})
}

// VersionCmp compares two Debian versions (CompareVersions); the Debian
// ordering has no notion of trailing zeroes, so ignoreTrailingZeroes has no
// effect.
func (p *Provider) VersionCmp(a, b string, _ bool) (int, error) {
	return CompareVersions(a, b)
}

// policy asks apt-cache policy (with APT::Cmd::Pattern-Only, in the C
// locale so its labels are not translated) about pkg. The answer must be
// one package whose name is exactly pkg (an architecture-qualified name
// may be shown without its native architecture); anything else, no answer
// included, is an error wrapping pkgtype.ErrNoSuchPackage. Callers may or
// may not hold the lock: apt-cache policy only reads.
func (p *Provider) policy(ctx context.Context, pkg string) (aptPolicy, error) {
	args := []string{"-o", patternOnly, "policy", "--", pkg}
	res, err := p.runLocked(ctx, []string{"LC_ALL=C"}, "apt-cache", args...)
	if err != nil {
		return aptPolicy{}, err
	}
	if res.ExitCode != 0 {
		return aptPolicy{}, failed(res, "apt-cache", args...)
	}
	return parsePolicy(pkg, res.Stdout)
}

// aptPolicy is what apt-cache policy says of one package: its candidate
// ("" for none) and every version of its version table.
type aptPolicy struct {
	candidate string
	versions  []string
}

// offers reports, as an error wrapping ErrNoSuchVersion, that version is
// a specific version apt does not list for pkg; present, latest and the
// listed versions are nil.
func (pol aptPolicy) offers(pkg, version string) error {
	switch version {
	case "", pkgtype.EnsurePresent, pkgtype.EnsureLatest, pkgtype.EnsureAbsent:
		return nil
	}
	if slices.Contains(pol.versions, version) {
		return nil
	}
	listed := "none"
	if len(pol.versions) > 0 {
		listed = strings.Join(pol.versions[:min(len(pol.versions), 5)], ", ")
	}
	hint := ""
	if !strings.Contains(version, ":") {
		for _, v := range pol.versions {
			if _, rest, ok := strings.Cut(v, ":"); ok && rest == version {
				hint = fmt.Sprintf(" (did you mean %s? a version without its epoch is epoch 0)", v)
				break
			}
		}
	}
	return fmt.Errorf("%w: apt lists no version %s of %s%s; it lists %s", ErrNoSuchVersion, version, pkg, hint, listed)
}

// parsePolicy reads apt-cache policy output for pkg: one stanza per
// package, each opening with the package's name and a colon at the start
// of a line, then indented lines, among them "Candidate: VERSION" and,
// below "Version table:", a line per version (indented five spaces, "*** "
// marking the installed one) each followed by its sources (indented more).
func parsePolicy(pkg string, out []byte) (aptPolicy, error) {
	var names []string
	var pol aptPolicy
	table := false
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		if line[0] != ' ' {
			name, ok := strings.CutSuffix(line, ":")
			if !ok {
				return aptPolicy{}, fmt.Errorf("%w: apt-cache policy printed %q for %s, expected a package name and a colon", pkgtype.ErrUnexpectedOutput, boundedOutput([]byte(line)), pkg)
			}
			names = append(names, name)
			table = false
			continue
		}
		if len(names) != 1 {
			continue
		}
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "Version table:":
			table = true
		case table && len(line) > 5 && !strings.HasPrefix(line, "      "):
			if f := strings.Fields(strings.TrimPrefix(trimmed, "*** ")); len(f) > 0 {
				pol.versions = append(pol.versions, f[0])
			}
		case !table:
			if v, ok := strings.CutPrefix(trimmed, "Candidate:"); ok {
				pol.candidate = strings.TrimSpace(v)
			}
		}
	}
	switch {
	case len(names) == 0:
		return aptPolicy{}, fmt.Errorf("%w %s: apt knows no package of that name", pkgtype.ErrNoSuchPackage, pkg)
	case len(names) > 1 || !sameName(names[0], pkg):
		shown := names[:min(len(names), 5)]
		return aptPolicy{}, fmt.Errorf("%w %s: apt-cache policy answered for %s, not for a package of exactly that name", pkgtype.ErrNoSuchPackage, pkg, strings.Join(shown, ", "))
	}
	if pol.candidate == "(none)" {
		pol.candidate = ""
	}
	if pol.candidate != "" {
		if err := pkgtype.ValidateVersion(pol.candidate); err != nil {
			return aptPolicy{}, fmt.Errorf("%w: apt-cache policy candidate for %s: %w", pkgtype.ErrUnexpectedOutput, pkg, err)
		}
	}
	return pol, nil
}

// sameName says whether apt's name for a package is pkg: equal, or pkg
// qualified with the native architecture that apt leaves out.
func sameName(shown, pkg string) bool {
	if shown == pkg {
		return true
	}
	base, _, qualified := strings.Cut(pkg, ":")
	return qualified && shown == base
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
