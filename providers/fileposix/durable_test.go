package fileposix_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/fileposix"
)

// syncCall is what a recording sync saw when Store asked for the
// temporary file to be flushed.
type syncCall struct {
	// tmp is the temporary file's content and mode read through the
	// descriptor handed to sync
	tmp  []byte
	mode os.FileMode
	uid  uint32
	// target is what the target path held at that moment
	target []byte
	// names are the directory's entries at that moment
	names []string
}

var _ = Describe("Provider.Store's durability", func() {
	var (
		ctx   context.Context
		dir   string
		path  string
		prov  *fileposix.Provider
		calls []syncCall
	)

	BeforeEach(func() {
		ctx = context.Background()
		dir = GinkgoT().TempDir()
		path = filepath.Join(dir, "app.conf")
		prov = fileposix.New(nil)
		calls = nil
		fileposix.SetSync(prov, func(f *os.File) error {
			GinkgoHelper()
			fi, err := f.Stat()
			Expect(err).ToNot(HaveOccurred())
			tmp := make([]byte, fi.Size())
			_, err = f.ReadAt(tmp, 0)
			Expect(err).ToNot(HaveOccurred())
			target, err := os.ReadFile(path)
			if errors.Is(err, os.ErrNotExist) {
				target = nil
			} else {
				Expect(err).ToNot(HaveOccurred())
			}
			calls = append(calls, syncCall{tmp: tmp, mode: fi.Mode().Perm(), uid: fi.Sys().(*syscall.Stat_t).Uid, target: target, names: listDir(dir)})
			return f.Sync()
		})
	})

	It("flushes the whole temporary file, with its final mode and owner, before the rename makes it visible", func() {
		Expect(os.WriteFile(path, []byte("old content, canary-durable-old\n"), 0o644)).To(Succeed())
		Expect(prov.Store(ctx, path, []byte("new content, canary-durable-new\n"), "", "nobody", "nogroup", "0640")).To(Succeed())

		Expect(calls).To(HaveLen(1), "one flush per write: the temporary file's")
		c := calls[0]
		Expect(string(c.tmp)).To(Equal("new content, canary-durable-new\n"), "the temporary file is wholly written when flushed")
		Expect(c.mode).To(Equal(os.FileMode(0o640)))
		Expect(c.uid).To(Equal(uint32(65534)), "owned by nobody before the flush")
		Expect(string(c.target)).To(Equal("old content, canary-durable-old\n"), "the target still holds the whole old file when the new one is flushed")
		Expect(c.names).To(HaveLen(2))
		Expect(c.names).To(ContainElement(HavePrefix(".app.conf.ccm-")))

		Expect(os.ReadFile(path)).To(Equal([]byte("new content, canary-durable-new\n")))
		Expect(listDir(dir)).To(Equal([]string{"app.conf"}), "no temporary file is left")
	})

	It("leaves the old file whole and no temporary file when the flush fails", func() {
		Expect(os.WriteFile(path, []byte("old content, canary-durable-kept\n"), 0o644)).To(Succeed())
		ioErr := errors.New("flush failed (canary-durable-eio)")
		fileposix.SetSync(prov, func(*os.File) error { return ioErr })
		err := prov.Store(ctx, path, []byte("never visible"), "", "root", "root", "0644")
		Expect(err).To(MatchError(ioErr))
		Expect(err).To(MatchError(ContainSubstring("could not sync temporary file")))
		Expect(os.ReadFile(path)).To(Equal([]byte("old content, canary-durable-kept\n")))
		Expect(listDir(dir)).To(Equal([]string{"app.conf"}))
	})

	It("never lets a reader see a partial file while it is replaced", func() {
		fileposix.SetSync(prov, nil) // the real fsync
		oldContent := bytes.Repeat([]byte("o"), 256<<10)
		newContent := bytes.Repeat([]byte("n"), 256<<10)
		Expect(os.WriteFile(path, oldContent, 0o644)).To(Succeed())

		stop := make(chan struct{})
		var (
			wg   sync.WaitGroup
			bad  []string
			seen int
		)
		wg.Go(func() {
			for {
				b, err := os.ReadFile(path)
				seen++
				switch {
				case err != nil:
					bad = append(bad, err.Error())
				case !bytes.Equal(b, oldContent) && !bytes.Equal(b, newContent):
					bad = append(bad, fmt.Sprintf("%d bytes: %.16s...", len(b), b))
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		})
		for i := range 20 {
			content := newContent
			if i%2 == 1 {
				content = oldContent
			}
			Expect(prov.Store(ctx, path, content, "", "root", "root", "0644")).To(Succeed())
		}
		close(stop)
		wg.Wait()
		Expect(seen).To(BeNumerically(">", 0))
		Expect(bad).To(BeEmpty(), "every read saw the whole old or the whole new file")
		Expect(os.ReadFile(path)).To(Equal(oldContent))
		Expect(listDir(dir)).To(Equal([]string{"app.conf"}))
	})
})
