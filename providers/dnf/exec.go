package dnf

import (
	"context"
	"fmt"
	"strings"

	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
)

// SearchPath is where the provider finds rpm and dnf, and the PATH they run
// with.
const SearchPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// maxTail bounds how much of a failed command's output goes into an error.
const maxTail = 1024

// runLocked runs one command; the caller holds p.lock. A non-zero exit is
// returned as a result, not an error.
func (p *Provider) runLocked(ctx context.Context, name string, args ...string) (*runner.Result, error) {
	cmd := runner.Command{Path: name, Args: args, SearchPath: SearchPath}
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

// checkedLocked runs one command (the caller holds p.lock) and turns a
// non-zero exit into an error.
func (p *Provider) checkedLocked(ctx context.Context, name string, args ...string) error {
	res, err := p.runLocked(ctx, name, args...)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%w: %s exited with status %d: %s", pkgtype.ErrCommandFailed,
			strings.Join(append([]string{name}, args...), " "), res.ExitCode, res.Tail(maxTail))
	}
	return nil
}
