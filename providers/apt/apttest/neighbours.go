package apttest

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// neighbourVersion is the one version each neighbour package is built at.
const neighbourVersion = "1.0-1"

// neighbours are packages the repository also holds, named so that a
// regular expression or glob written for the test package's family reaches
// them: ccm-fleet-testpkg-a and ccm-fleet-testpkg-b match the regex
// "ccm-fleet-testpkg-." and the glob "ccm-fleet-testpkg-*", and
// zz-ccm-fleet-testpkg-x matches the same (unanchored) regex but not the
// glob. None of them must ever be installed by a name that is not its own.
func neighbours() []string {
	return []string{"ccm-fleet-testpkg-a", "ccm-fleet-testpkg-b", "zz-ccm-fleet-testpkg-x"}
}

// neighbourMarker is the file a neighbour package installs.
func neighbourMarker(name string) string { return "/usr/share/" + name + "/MARKER" }

// Neighbours are the names of the repository's neighbour packages (see
// the package documentation), each at version 1.0-1.
func (r *Repo) Neighbours() []string { return neighbours() }

// Installed lists which of the test package and its neighbours dpkg
// reports installed.
func (r *Repo) Installed(ctx context.Context) ([]string, error) {
	var out []string
	for _, name := range append([]string{packageName}, neighbours()...) {
		_, status, err := dpkgStatusOf(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("apttest: %w", err)
		}
		if status == "installed" {
			out = append(out, name)
		}
	}
	return out, nil
}

// checkNeighboursClean returns an error naming each neighbour dpkg still
// has a record of.
func checkNeighboursClean(ctx context.Context) error {
	var left []string
	for _, name := range neighbours() {
		version, status, err := dpkgStatusOf(ctx, name)
		if err != nil {
			return err
		}
		if status != "" {
			left = append(left, name+" "+version+" "+status)
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("dpkg still records %s", strings.Join(left, ", "))
	}
	return nil
}

// dpkgStatusOf asks dpkg-query for name's version and status word; status
// is "" when dpkg has no record of exactly that package.
func dpkgStatusOf(ctx context.Context, name string) (version, status string, err error) {
	cmd := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Package} ${Version} ${db:Status-Status}", "--", name)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 1 {
			return "", "", nil
		}
		return "", "", fmt.Errorf("dpkg-query %s: %w: %s", name, err, tail([]byte(stderr.String())))
	}
	fields := strings.Fields(string(b))
	switch {
	case len(fields) == 3 && fields[0] == name:
		return fields[1], fields[2], nil
	case len(fields) == 2 && fields[0] == name:
		return "", fields[1], nil
	}
	return "", "", fmt.Errorf("dpkg-query %s printed %q", name, tail(b))
}
