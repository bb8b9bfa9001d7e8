package fileposix_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ccm-fleet/ccm/providers/fileposix"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/filetype"
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

// BenchmarkApplyChange times one apply of the file resource that changes a
// small file's content, as a fleet change makes it: status, decide, the
// diff's read of the old content, the write and the status after it, with
// Store's fsync and without it (the rest of the path).
func BenchmarkApplyChange(b *testing.B) {
	for _, c := range []struct {
		name   string
		noSync bool
	}{
		{name: "fsync-file"},
		{name: "no-fsync", noSync: true},
	} {
		b.Run(c.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "etc", "ccm", "motd")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				b.Fatal(err)
			}
			prov := fileposix.New(nil)
			if c.noSync {
				fileposix.SetSync(prov, func(*os.File) error { return nil })
			}
			var ft filetype.Type
			ctx := context.Background()
			i := 0
			for b.Loop() {
				i++
				content := fmt.Sprintf("managed by the bench, version %d\n", i)
				p := &filetype.Properties{Owner: "root", Group: "root", Mode: "0644", Content: &content}
				p.Name = path
				if err := p.Validate(); err != nil {
					b.Fatal(err)
				}
				out, err := ft.Apply(ctx, &resources.ApplyContext{}, p, prov)
				if err != nil || !out.Changed {
					b.Fatalf("apply: changed %v, %v", out != nil && out.Changed, err)
				}
			}
		})
	}
}
