package dnf

import (
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

// QueryFormat is rpm's query format: name, epoch (0 when unset), version,
// release and architecture. There is no shell, so it is passed as one
// argument without the quotes a shell command line needs.
const QueryFormat = "%{NAME} %|EPOCH?{%{EPOCH}}:{0}| %{VERSION} %{RELEASE} %{ARCH}"

// Provider manages packages with rpm and dnf. Every command it runs holds
// the lock shared by the process's package providers.
//
// No "--" goes before package operands: rpm -q takes the package before
// --queryformat, which "--" would turn into an operand,
// and dnf5's argument parser rejects "--". Package names and versions are
// validated instead, and can never start with a hyphen.
type Provider struct {
	runner runner.Runner
	log    *slog.Logger
	// lock is held while a package command runs
	lock *sync.Mutex
}

// Name returns "dnf".
func (p *Provider) Name() string { return ProviderName }

// Status runs rpm -q. A zero exit reports the package present at
// VERSION-RELEASE, or EPOCH:VERSION-RELEASE when it has an epoch other
// than 0 (as rpm's %{EVR} prints it, so that an ensured version with an
// epoch can match), with the epoch and release also in
// Metadata.Extended; a non-zero exit ("package foo is not installed")
// reports it absent.
func (p *Provider) Status(ctx context.Context, pkg string) (*protocol.PackageState, error) {
	if err := pkgtype.ValidateName(pkg); err != nil {
		return nil, err
	}
	p.lock.Lock()
	defer p.lock.Unlock()
	res, err := p.runLocked(ctx, "rpm", "-q", pkg, "--queryformat", QueryFormat)
	if err != nil {
		return nil, err
	}
	return parseStatus(pkg, res)
}

func parseStatus(pkg string, res *runner.Result) (*protocol.PackageState, error) {
	if res.ExitCode != 0 {
		return &protocol.PackageState{
			CommonState: protocol.NewCommonState(protocol.TypePackage, pkg, pkgtype.EnsureAbsent),
			Metadata:    &protocol.PackageMetadata{Name: pkg, Version: pkgtype.EnsureAbsent, Provider: ProviderName},
		}, nil
	}
	fields := strings.Fields(string(res.Stdout))
	if len(fields) != 5 {
		out := string(res.Stdout)
		if len(out) > 256 {
			out = out[:256] + "..."
		}
		return nil, fmt.Errorf("%w: rpm -q printed %q for %s, expected name, epoch, version, release and architecture (when several versions are installed name one, e.g. %s-VERSION-RELEASE.ARCH)",
			pkgtype.ErrUnexpectedOutput, out, pkg, pkg)
	}
	name, epoch, version, release, arch := fields[0], fields[1], fields[2], fields[3], fields[4]
	if name != pkg {
		// rpm -q reads "nginx-1.20.1" as nginx at version 1.20.1: no
		// package of exactly that name is installed.
		return &protocol.PackageState{
			CommonState: protocol.NewCommonState(protocol.TypePackage, pkg, pkgtype.EnsureAbsent),
			Metadata:    &protocol.PackageMetadata{Name: pkg, Version: pkgtype.EnsureAbsent, Provider: ProviderName},
		}, nil
	}
	evr := version + "-" + release
	if epoch != "0" {
		evr = epoch + ":" + evr
	}
	return &protocol.PackageState{
		CommonState: protocol.NewCommonState(protocol.TypePackage, pkg, evr),
		Metadata: &protocol.PackageMetadata{
			Name: name, Version: evr, Arch: arch, Provider: ProviderName,
			Extended: map[string]any{"epoch": epoch, "release": release},
		},
	}, nil
}

// Install runs dnf install -y for pkg (present or latest) or pkg-version,
// once dnf repoquery shows that the operand means packages named exactly
// pkg and nothing else (else an error wrapping pkgtype.ErrNoSuchPackage,
// and nothing is installed).
func (p *Provider) Install(ctx context.Context, pkg, version string) error {
	operand, err := operand(pkg, version)
	if err != nil {
		return err
	}
	return p.runResolved(ctx, pkg, operand, "dnf", "install", "-y", operand)
}

// Resolve reports whether Install(ctx, pkg, version) could start, asking
// dnf repoquery as Install does and changing nothing: an error wrapping
// pkgtype.ErrNoSuchPackage when the operand does not mean packages named
// exactly pkg.
func (p *Provider) Resolve(ctx context.Context, pkg, version string) error {
	operand, err := operand(pkg, version)
	if err != nil {
		return err
	}
	p.lock.Lock()
	defer p.lock.Unlock()
	if err := p.resolveLocked(ctx, pkg, operand); err != nil {
		return err
	}
	return p.epochLocked(ctx, pkg, operand)
}

var _ pkgtype.Resolver = (*Provider)(nil)

// Upgrade runs dnf upgrade -y pkg for latest (and present), which installs
// the newest version the repositories have: dnf install leaves an
// installed package as it is. For a version it runs dnf install -y
// pkg-version, which moves an installed package to exactly that version.
// Like Install, it first checks with dnf repoquery that the operand means
// packages named exactly pkg.
func (p *Provider) Upgrade(ctx context.Context, pkg, version string) error {
	operand, err := operand(pkg, version)
	if err != nil {
		return err
	}
	if operand == pkg {
		return p.runResolved(ctx, pkg, operand, "dnf", "upgrade", "-y", operand)
	}
	return p.runResolved(ctx, pkg, operand, "dnf", "install", "-y", operand)
}

// Downgrade runs dnf downgrade -y pkg-version; it needs a specific version.
func (p *Provider) Downgrade(ctx context.Context, pkg, version string) error {
	if !pkgtype.IsVersion(version) || version == "" {
		return resources.Invalidf("package %s: downgrade needs a specific version, not %q", pkg, version)
	}
	operand, err := operand(pkg, version)
	if err != nil {
		return err
	}
	return p.runResolved(ctx, pkg, operand, "dnf", "downgrade", "-y", operand)
}

// Uninstall runs dnf remove -y once rpm -q shows a package of exactly
// that name installed (else an error wrapping pkgtype.ErrNoSuchPackage).
func (p *Provider) Uninstall(ctx context.Context, pkg string) error {
	if err := pkgtype.ValidateName(pkg); err != nil {
		return err
	}
	p.lock.Lock()
	defer p.lock.Unlock()
	res, err := p.runLocked(ctx, "rpm", "-q", pkg, "--queryformat", QueryFormat)
	if err != nil {
		return err
	}
	st, err := parseStatus(pkg, res)
	if err != nil {
		return err
	}
	if st.Ensure == pkgtype.EnsureAbsent {
		return fmt.Errorf("%w %s: rpm has no package of exactly that name installed", pkgtype.ErrNoSuchPackage, pkg)
	}
	return p.checkedLocked(ctx, "dnf", "remove", "-y", pkg)
}

// VersionCmp compares two versions as rpm orders them (the package-level
// VersionCmp); it never fails.
func (p *Provider) VersionCmp(a, b string, ignoreTrailingZeroes bool) (int, error) {
	return VersionCmp(a, b, ignoreTrailingZeroes), nil
}

// operand validates pkg and version and joins them the way dnf names a
// version: pkg-version, or pkg alone for present and latest.
func operand(pkg, version string) (string, error) {
	if err := pkgtype.ValidateName(pkg); err != nil {
		return "", err
	}
	switch version {
	case "", pkgtype.EnsurePresent, pkgtype.EnsureLatest:
		return pkg, nil
	case pkgtype.EnsureAbsent:
		return "", resources.Invalidf("package %s: cannot install version %q", pkg, version)
	}
	if err := pkgtype.ValidateVersion(version); err != nil {
		return "", err
	}
	return pkg + "-" + version, nil
}
