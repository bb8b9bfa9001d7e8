package packaging

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// maxDocBytes bounds what one command may print as a manual page or a
// completion script.
const maxDocBytes = 4 << 20

// generateDocs runs each command in binDir (built for this machine) to
// write its manual page (`CMD man`, gzipped as man-db expects) and its
// bash, zsh and fish completion scripts (`CMD completion SHELL`) into
// docDir, named as docFiles says. What the packages carry is thus what the
// packaged commands really accept.
func generateDocs(ctx context.Context, binDir, docDir string) error {
	if err := os.MkdirAll(docDir, 0o755); err != nil {
		return fmt.Errorf("docs directory: %w", err)
	}
	for _, cmd := range Commands {
		bin := filepath.Join(binDir, cmd)
		man, bash, zsh, fish := docFiles(cmd)
		page, err := output(ctx, bin, "man")
		if err != nil {
			return err
		}
		var gz bytes.Buffer
		zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		if err != nil {
			return fmt.Errorf("%s manual page: %w", cmd, err)
		}
		// No name and no time in the gzip header: the same page, the
		// same bytes (reproducible packages).
		if _, err := zw.Write(page); err != nil {
			return fmt.Errorf("%s manual page: %w", cmd, err)
		}
		if err := zw.Close(); err != nil {
			return fmt.Errorf("%s manual page: %w", cmd, err)
		}
		if err := os.WriteFile(filepath.Join(docDir, man), gz.Bytes(), 0o644); err != nil {
			return fmt.Errorf("%s manual page: %w", cmd, err)
		}
		for shell, name := range map[string]string{"bash": bash, "zsh": zsh, "fish": fish} {
			script, err := output(ctx, bin, "completion", shell)
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(docDir, name), script, 0o644); err != nil {
				return fmt.Errorf("%s %s completion: %w", cmd, shell, err)
			}
		}
	}
	return nil
}

// output runs bin with args and returns its stdout, which must be non-empty
// and at most maxDocBytes.
func output(ctx context.Context, bin string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &limitedBuffer{b: &stdout, n: maxDocBytes}, &limitedBuffer{b: &stderr, n: 4096}
	err := cmd.Run()
	name := filepath.Base(bin)
	for _, a := range args {
		name += " " + a
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %s: %w: %s", ErrDocs, name, err, bytes.TrimSpace(stderr.Bytes()))
	case stdout.Len() >= maxDocBytes:
		return nil, fmt.Errorf("%w: %s: more than %d bytes", ErrDocs, name, maxDocBytes)
	case stdout.Len() == 0:
		return nil, fmt.Errorf("%w: %s printed nothing", ErrDocs, name)
	}
	return stdout.Bytes(), nil
}

// limitedBuffer keeps the first n bytes written to it and drops the rest.
type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
