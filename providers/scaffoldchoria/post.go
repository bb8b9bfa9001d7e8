package scaffoldchoria

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"time"

	"github.com/kballard/go-shellquote"
)

const (
	// DefaultPostTimeout bounds each post command when ctx has no deadline.
	DefaultPostTimeout = 5 * time.Minute
	// postKillAfter is how long timeout(1) waits after TERM before KILL.
	postKillAfter = 5 * time.Second
	// MaxErrorBytes bounds the text of a render error, which carries the
	// output of a failed post command.
	MaxErrorBytes = 4096
)

// boundPost prefixes every post command with timeout(1) so a command that
// hangs is killed. The limit is the time left on ctx, or DefaultPostTimeout.
// Without timeout(1) the commands are returned unchanged and limit is zero.
func (p *Provider) boundPost(ctx context.Context, post []map[string]string) ([]map[string]string, time.Duration) {
	if len(post) == 0 {
		return nil, 0
	}
	if p.timeoutBin == "" {
		return post, 0
	}
	limit := DefaultPostTimeout
	if dl, ok := ctx.Deadline(); ok {
		limit = min(time.Until(dl), limit)
	}
	limit = max(limit, time.Millisecond)
	prefix := shellquote.Join(p.timeoutBin, "--kill-after="+seconds(postKillAfter), seconds(limit))
	out := make([]map[string]string, 0, len(post))
	for _, entry := range post {
		bounded := make(map[string]string, len(entry))
		for glob, command := range entry {
			bounded[glob] = prefix + " " + command
		}
		out = append(out, bounded)
	}
	return out, limit
}

func seconds(d time.Duration) string {
	return fmt.Sprintf("%.3fs", d.Seconds())
}

// renderError bounds the text of a library error and explains exit status
// 124, which is timeout(1) killing a post command.
func renderError(err error, limit time.Duration) error {
	msg := err.Error()
	hint := ""
	var exit *exec.ExitError
	if limit > 0 && errors.As(err, &exit) && exit.ExitCode() == 124 {
		hint = fmt.Sprintf(" (a post command ran past its time limit of %s and was killed)", limit.Round(time.Millisecond))
	}
	if len(msg) <= MaxErrorBytes && hint == "" {
		return err
	}
	if len(msg) > MaxErrorBytes {
		msg = msg[:MaxErrorBytes] + "... (truncated)"
	}
	return &boundedError{msg: msg + hint, err: err}
}

// boundedError carries a shortened message but still unwraps to the cause.
type boundedError struct {
	msg string
	err error
}

func (e *boundedError) Error() string { return e.msg }
func (e *boundedError) Unwrap() error { return e.err }
