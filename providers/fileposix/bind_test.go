package fileposix_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/fileposix"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

// walkCounter counts the parent directory walks of a provider, by path.
type walkCounter struct {
	mu    sync.Mutex
	walks map[string]int
}

func countWalks(p *fileposix.Provider) *walkCounter {
	c := &walkCounter{walks: map[string]int{}}
	fileposix.SetOpened(p, func(name string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.walks[name]++
	})
	return c
}

func (c *walkCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.walks
	c.walks = map[string]int{}
	return w
}

var _ = Describe("Provider.Bind", func() {
	var (
		ctx  context.Context
		dir  string
		path string
		prov *fileposix.Provider
		ft   filetype.Type
	)
	BeforeEach(func() {
		ctx = context.Background()
		dir = GinkgoT().TempDir()
		path = filepath.Join(dir, "motd")
		prov = fileposix.New(nil)
	})
	fileProps := func(content string) *filetype.Properties {
		p := &filetype.Properties{Owner: "root", Group: "root", Mode: "0644", Content: &content}
		p.Name = path
		Expect(p.Validate()).To(Succeed())
		return p
	}

	It("opens the parent directory once per apply: status, write and the status after it share the handle", func() {
		Expect(os.WriteFile(path, []byte("old\n"), 0o644)).To(Succeed())
		walks := countWalks(prov)

		out, err := ft.Apply(ctx, &resources.ApplyContext{}, fileProps("new\n"), prov)
		Expect(err).ToNot(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		Expect(os.ReadFile(path)).To(Equal([]byte("new\n")))
		Expect(walks.take()).To(Equal(map[string]int{path: 1}), "one walk for the change")

		out, err = ft.Apply(ctx, &resources.ApplyContext{}, fileProps("new\n"), prov)
		Expect(err).ToNot(HaveOccurred())
		Expect(out.Changed).To(BeFalse())
		Expect(walks.take()).To(Equal(map[string]int{path: 1}), "one walk for a file already as asked")

		out, err = ft.Apply(ctx, &resources.ApplyContext{Noop: true}, fileProps("newer\n"), prov)
		Expect(err).ToNot(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		Expect(out.NoopMessage).ToNot(BeEmpty())
		Expect(os.ReadFile(path)).To(Equal([]byte("new\n")), "noop wrote nothing")
		Expect(walks.take()).To(Equal(map[string]int{path: 1}), "one walk for a noop")
	})

	It("writes into the directory it opened, not through a link swapped in for it after the status", func() {
		parent := filepath.Join(dir, "conf")
		elsewhere := filepath.Join(dir, "elsewhere")
		Expect(os.Mkdir(parent, 0o755)).To(Succeed())
		Expect(os.Mkdir(elsewhere, 0o700)).To(Succeed())
		name := filepath.Join(parent, "app.conf")

		bctx, release := prov.Bind(ctx, name)
		defer release()
		st, err := prov.Status(bctx, name)
		Expect(err).ToNot(HaveOccurred())
		Expect(st.Ensure).To(Equal(filetype.EnsureAbsent))

		moved := filepath.Join(dir, "conf.moved")
		Expect(os.Rename(parent, moved)).To(Succeed())
		Expect(os.Symlink(elsewhere, parent)).To(Succeed())

		Expect(prov.Store(bctx, name, []byte("v1\n"), "", "root", "root", "0600")).To(Succeed())
		Expect(os.ReadFile(filepath.Join(moved, "app.conf"))).To(Equal([]byte("v1\n")))
		entries, err := os.ReadDir(elsewhere)
		Expect(err).ToNot(HaveOccurred())
		Expect(entries).To(BeEmpty(), "nothing written through the link")
		st, err = prov.Status(bctx, name)
		Expect(err).ToNot(HaveOccurred())
		Expect(st.Ensure).To(Equal(filetype.EnsurePresent), "the status after the write looks in the same directory")
		got, _, err := prov.ReadContent(bctx, name, 100)
		Expect(err).ToNot(HaveOccurred())
		Expect(got).To(Equal([]byte("v1\n")))

		// A fresh walk follows the link (root made it, so it is trusted) to
		// the other directory: resolving the path again would have written
		// there.
		st, err = prov.Status(ctx, name)
		Expect(err).ToNot(HaveOccurred())
		Expect(st.Ensure).To(Equal(filetype.EnsureAbsent))
	})

	It("holds nothing when the parent cannot be opened, and the apply reports it as without Bind", func() {
		name := filepath.Join(dir, "missing", "motd")
		walks := countWalks(prov)
		p := fileProps("x\n")
		p.Name = name
		_, err := ft.Apply(ctx, &resources.ApplyContext{}, p, prov)
		Expect(err).To(MatchError(ContainSubstring("parent directory " + filepath.Join(dir, "missing") + " does not exist")))
		Expect(walks.take()[name]).To(Equal(3), "bind, status and store each walk when there is no handle to hold")
	})

	It("holds the handle for its own provider and path only", func() {
		other := filepath.Join(dir, "other")
		walks := countWalks(prov)
		bctx, release := prov.Bind(ctx, path)
		defer release()
		Expect(prov.Store(bctx, other, []byte("o\n"), "", "root", "root", "0644")).To(Succeed())
		Expect(os.ReadFile(other)).To(Equal([]byte("o\n")))
		Expect(prov.CreateDirectory(bctx, filepath.Join(dir, "d"), "root", "root", "0755")).To(Succeed())
		st, err := prov.Status(bctx, filepath.Join(dir, "d"))
		Expect(err).ToNot(HaveOccurred())
		Expect(st.Ensure).To(Equal(filetype.EnsureDirectory))
		Expect(walks.take()).To(Equal(map[string]int{path: 1, other: 1, filepath.Join(dir, "d"): 1}), "Bind, then the other path's own walks")

		second := fileposix.New(nil)
		secondWalks := countWalks(second)
		_, err = second.Status(bctx, path)
		Expect(err).ToNot(HaveOccurred())
		Expect(secondWalks.take()).To(Equal(map[string]int{path: 1}), "another provider walks for itself")
	})

	It("keeps the methods of a provider that wraps it by embedding", func() {
		Expect(os.WriteFile(path, []byte("old\n"), 0o644)).To(Succeed())
		walks := countWalks(prov)
		w := &storeCounting{Provider: prov}
		_, err := ft.Apply(ctx, &resources.ApplyContext{}, fileProps("new\n"), w)
		Expect(err).ToNot(HaveOccurred())
		Expect(w.stores).To(Equal(1), "the wrapper's Store ran")
		Expect(os.ReadFile(path)).To(Equal([]byte("new\n")))
		Expect(walks.take()).To(Equal(map[string]int{path: 1}))
	})
})

// storeCounting wraps the posix provider and counts its Store calls.
type storeCounting struct {
	*fileposix.Provider
	stores int
}

func (s *storeCounting) Store(ctx context.Context, name string, contents []byte, source string, owner, group, mode string) error {
	s.stores++
	return s.Provider.Store(ctx, name, contents, source, owner, group, mode)
}
