package dnf

import (
	"bufio"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ccm-fleet/ccm/resources/pkgtype"
)

// repoqueryFormat prints each matching package's name on a line of its own
// (dnf4 adds another newline, dnf5 none: empty lines are skipped).
const repoqueryFormat = "%{name}\n"

// maxResolveNames bounds how many of the names dnf answered with an error
// lists.
const maxResolveNames = 5

// runResolved runs a dnf command whose operand names pkg, under the lock,
// once dnf repoquery shows that operand means packages named exactly pkg
// and nothing else. dnf reads a package spec as a glob, as name-version,
// name-version-release or name.arch, and as something a package provides:
// "nginx-1.20.1" would install nginx, "webserver" whatever provides it.
func (p *Provider) runResolved(ctx context.Context, pkg, operand, name string, args ...string) error {
	p.lock.Lock()
	defer p.lock.Unlock()
	if err := p.resolveLocked(ctx, pkg, operand); err != nil {
		return err
	}
	if err := p.epochLocked(ctx, pkg, operand); err != nil {
		return err
	}
	return p.checkedLocked(ctx, name, args...)
}

// epochLocked refuses a version written without its epoch (operand
// pkg-VERSION, no colon) that the repositories have only at a non-zero
// epoch. dnf reads such an operand as that version at any epoch, while
// rpm, and so the package's status, read it as epoch 0: a run would leave
// the package as it is and end in "desired state not achieved", and a
// noop would promise it. The error wraps pkgtype.ErrNoSuchPackage and names
// the version with its epoch. The caller holds p.lock.
func (p *Provider) epochLocked(ctx context.Context, pkg, operand string) error {
	version, specific := strings.CutPrefix(operand, pkg+"-")
	if !specific || strings.Contains(version, ":") {
		return nil
	}
	epochs, err := p.repoquery(ctx, "%{epoch}\n", operand)
	if err != nil || slices.Contains(epochs, "0") || slices.Contains(epochs, "(none)") {
		return err
	}
	if len(epochs) == 0 {
		return nil
	}
	return fmt.Errorf("%w %s at version %s: the repositories have it only at epoch %s (did you mean %s:%s? a version without its epoch is epoch 0)",
		pkgtype.ErrNoSuchPackage, pkg, version, strings.Join(epochs, ", "), epochs[0], version)
}

// resolveLocked asks dnf repoquery what operand means: one or more
// packages, every one named exactly pkg, or an error wrapping
// pkgtype.ErrNoSuchPackage. The caller holds p.lock.
func (p *Provider) resolveLocked(ctx context.Context, pkg, operand string) error {
	names, err := p.repoquery(ctx, repoqueryFormat, operand)
	if err != nil {
		return err
	}
	switch {
	case len(names) == 0 && operand != pkg:
		return fmt.Errorf("%w %s: dnf knows no package of that name at version %s", pkgtype.ErrNoSuchPackage, pkg, strings.TrimPrefix(operand, pkg+"-"))
	case len(names) == 0:
		return fmt.Errorf("%w %s: dnf knows no package of that name", pkgtype.ErrNoSuchPackage, pkg)
	case len(names) > 1 || names[0] != pkg:
		return fmt.Errorf("%w %s: dnf reads %s as %s, not as a package of exactly that name",
			pkgtype.ErrNoSuchPackage, pkg, operand, strings.Join(names[:min(len(names), maxResolveNames)], ", "))
	}
	return nil
}

// repoquery runs dnf repoquery of operand with one field a line in
// format and returns the distinct answers, in order. A line with a space
// is a message (such as dnf4's "Last metadata expiration check"), not an
// answer. The caller holds p.lock.
func (p *Provider) repoquery(ctx context.Context, format, operand string) ([]string, error) {
	args := []string{"repoquery", "--quiet", "--queryformat", format, operand}
	res, err := p.runLocked(ctx, "dnf", args...)
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("%w: dnf %s exited with status %d: %s", pkgtype.ErrCommandFailed,
			strings.Join(args, " "), res.ExitCode, res.Tail(maxTail))
	}
	var out []string
	sc := bufio.NewScanner(strings.NewReader(string(res.Stdout)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" && !strings.ContainsAny(line, " \t") && !slices.Contains(out, line) {
			out = append(out, line)
		}
	}
	return out, nil
}
