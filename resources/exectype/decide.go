package exectype

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/ccm-fleet/ccm/protocol"
)

// Bounds of the output quoted in a failure message.
const (
	maxSnippetLines = 3
	maxSnippetBytes = 512
)

// decision is whether to run the command, and why.
type decision struct {
	run     bool
	refresh bool
	reason  string
}

// decide applies the decision table in order: a subscribe refresh runs the
// command regardless of creates and refreshonly; else an existing creates
// file skips it; else refreshonly skips it; else a non-zero onlyif or a zero
// unless skips it; else it runs. Guards run through the provider, also under
// noop, as they change nothing.
func decide(ctx context.Context, prov Provider, p *Properties, st *protocol.ExecState, refresh bool, log *slog.Logger) (decision, error) {
	switch {
	case refresh:
		return decision{run: true, refresh: true, reason: "a subscribed resource changed"}, nil
	case p.Creates != "" && st.CreatesSatisfied:
		return decision{reason: "creates " + p.Creates + " exists"}, nil
	case p.RefreshOnly:
		return decision{reason: "refreshonly is set and no subscribed resource changed"}, nil
	}
	if p.OnlyIf != "" {
		code, err := guard(ctx, prov, p, "onlyif", p.OnlyIf, log)
		if err != nil {
			return decision{}, err
		}
		if code != 0 {
			return decision{reason: fmt.Sprintf("onlyif exited %d", code)}, nil
		}
	}
	if p.Unless != "" {
		code, err := guard(ctx, prov, p, "unless", p.Unless, log)
		if err != nil {
			return decision{}, err
		}
		if code == 0 {
			return decision{reason: "unless exited 0"}, nil
		}
	}
	return decision{run: true, reason: "not yet in its desired state"}, nil
}

// guard runs one guard command and returns its exit code.
func guard(ctx context.Context, prov Provider, p *Properties, which, command string, log *slog.Logger) (int, error) {
	res, err := prov.Execute(ctx, p, command)
	if err != nil {
		return 0, fmt.Errorf("%s guard: %w", which, err)
	}
	if res == nil {
		return 0, fmt.Errorf("%s guard: provider %s returned no result", which, prov.Name())
	}
	log.Debug("guard ran", "guard", which, "exit_code", res.ExitCode)
	return res.ExitCode, nil
}

// logOutput logs each line of the command's output at info level.
func logOutput(log *slog.Logger, res *Result) {
	for _, s := range []struct {
		name string
		out  []byte
	}{{"stdout", res.Stdout}, {"stderr", res.Stderr}} {
		sc := bufio.NewScanner(bytes.NewReader(s.out))
		sc.Buffer(make([]byte, 0, 4096), MaxOutput+1)
		for sc.Scan() {
			log.Info(sc.Text(), "stream", s.name)
		}
	}
}

// combinedOutput is stdout followed by stderr, at most MaxOutput bytes.
func combinedOutput(res *Result) string {
	var b strings.Builder
	b.Write(res.Stdout)
	if len(res.Stderr) > 0 {
		if b.Len() > 0 && !bytes.HasSuffix(res.Stdout, []byte("\n")) {
			b.WriteByte('\n')
		}
		b.Write(res.Stderr)
	}
	return truncate(b.String(), MaxOutput)
}

// firstLines quotes the first non-empty lines of stderr, or of stdout when
// stderr is empty, bounded for use in an error message.
func firstLines(res *Result) string {
	out := res.Stderr
	if len(bytes.TrimSpace(out)) == 0 {
		out = res.Stdout
	}
	var lines []string
	for line := range strings.Lines(string(out)) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		lines = append(lines, line)
		if len(lines) == maxSnippetLines {
			break
		}
	}
	return truncate(strings.Join(lines, " | "), maxSnippetBytes)
}

// truncate cuts s to at most max bytes without splitting a UTF-8 sequence.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
