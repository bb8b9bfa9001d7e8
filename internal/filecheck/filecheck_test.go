package filecheck_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccm-fleet/ccm/internal/filecheck"
)

var errThing = errors.New("invalid thing")

func TestReadBounded(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := filecheck.ReadBounded(p, 5); err != nil || string(b) != "12345" {
		t.Fatalf("at the limit: %q, %v", b, err)
	}
	if _, err := filecheck.ReadBounded(p, 4); err == nil || !strings.Contains(err.Error(), "larger than 4 bytes") {
		t.Fatalf("over the limit: %v", err)
	}
	_, err := filecheck.ReadBounded(filepath.Join(dir, "missing"), 4)
	if !errors.Is(filecheck.Wrap(errThing, err), fs.ErrNotExist) || !errors.Is(filecheck.Wrap(errThing, err), errThing) {
		t.Fatalf("a wrapped error matches neither its cause nor its sentinel: %v", err)
	}
	if w := filecheck.Decode(errThing, err); w.Error() != err.Error() {
		t.Fatalf("the text is only the problem: %q", w.Error())
	}
}
