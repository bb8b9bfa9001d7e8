package apt

import (
	"context"
	"fmt"
	"strings"

	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
)

// SearchPath is where the provider finds dpkg-query, apt-cache and apt-get,
// and the PATH they run with (dpkg needs the sbin directories).
const SearchPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Env returns the environment added to every command the provider runs, so
// that neither dpkg nor apt-listbugs nor apt-listchanges ever prompts.
func Env() []string {
	return []string{
		"DEBIAN_FRONTEND=noninteractive",
		"APT_LISTBUGS_FRONTEND=none",
		"APT_LISTCHANGES_FRONTEND=none",
	}
}

// maxTail bounds how much of a failed command's output goes into an error.
const maxTail = 1024

// runLocked runs one command; the caller holds p.lock for any command that
// may change or lock the package database (apt-cache policy, which only
// reads, may run without it). A non-zero exit is returned as a result, not
// an error.
func (p *Provider) runLocked(ctx context.Context, extraEnv []string, name string, args ...string) (*runner.Result, error) {
	cmd := runner.Command{Path: name, Args: args, Env: append(Env(), extraEnv...), SearchPath: SearchPath}
	resources.Logger(ctx, p.log).Debug("running package command", "command", cmd.String())
	res, err := p.runner.Run(ctx, cmd)
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, fmt.Errorf("%s: %w: no result", name, pkgtype.ErrUnexpectedOutput)
	}
	return res, nil
}

// failed describes a command that exited non-zero, with the end of what it
// printed (stderr, or stdout when stderr is empty).
func failed(res *runner.Result, name string, args ...string) error {
	return fmt.Errorf("%w: %s exited with status %d: %s", pkgtype.ErrCommandFailed,
		strings.Join(append([]string{name}, args...), " "), res.ExitCode, res.Tail(maxTail))
}
