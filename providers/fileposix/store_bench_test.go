package fileposix_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ccm-fleet/ccm/providers/fileposix"
)

// BenchmarkStore times one replacement of a small file, as a fleet change
// makes it, with Store's durability (the temporary file's fsync), with the
// directory's fsync after it that Store made until speed round 3, and
// without any flush (the floor of the rest of the write path).
func BenchmarkStore(b *testing.B) {
	for _, c := range []struct {
		name    string
		noSync  bool
		syncDir bool
	}{
		{name: "fsync-file"},
		{name: "fsync-file-and-dir", syncDir: true},
		{name: "no-fsync", noSync: true},
	} {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			path := filepath.Join(dir, "motd")
			prov := fileposix.New(nil)
			if c.noSync {
				fileposix.SetSync(prov, func(*os.File) error { return nil })
			}
			ctx := context.Background()
			i := 0
			for b.Loop() {
				i++
				if err := prov.Store(ctx, path, fmt.Appendf(nil, "managed by the bench, version %d\n", i), "", "root", "root", "0644"); err != nil {
					b.Fatal(err)
				}
				if c.syncDir {
					d, err := os.Open(dir)
					if err != nil {
						b.Fatal(err)
					}
					if err := d.Sync(); err != nil {
						b.Fatal(err)
					}
					_ = d.Close()
				}
			}
		})
	}
}
