package manifest_test

import (
	"context"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/exectype"
)

var _ = Describe("Running a manifest again", func() {
	const doc = `
ccm:
  resources:
    - exec:
        - "/bin/echo static":
            unless: "test 1 -gt 2 && test <x"
        - "/bin/echo {{ facts.host }}": {}
        - "/bin/echo templated":
            unless: "test ${ facts.host } = nobody"
`
	var (
		eng *engine.Engine
		m   *manifest.Manifest
	)
	BeforeEach(func() {
		eng = realEngine()
		var err error
		m, err = manifest.Parse([]byte(doc), manifest.ParseOptions{})
		Expect(err).ToNot(HaveOccurred())
	})

	// run runs m under noop with the fact host, and returns the
	// properties it prepared by resource name and the decodes it made.
	run := func(host string, change func(*exectype.Properties)) (map[string]*exectype.Properties, int64) {
		prepared := map[string]*exectype.Properties{}
		var mu sync.Mutex
		before := protocol.Decodes()
		_, err := manifest.Run(context.Background(), eng, m, manifest.RunOptions{Noop: true, Facts: map[string]any{"host": host},
			Prepared: func(p *engine.Prepared) {
				props := p.Properties.(*exectype.Properties)
				mu.Lock()
				prepared[p.Name()] = props
				mu.Unlock()
				if change != nil {
					change(props)
				}
			}})
		n := protocol.Decodes() - before
		Expect(err).ToNot(HaveOccurred())
		return prepared, n
	}

	It("decodes the properties with no template once, and expands the templated ones with each run's facts", func() {
		first, n := run("web-1", nil)
		Expect(n).To(Equal(int64(3)), "every resource's properties, once")
		Expect(first).To(HaveKey("/bin/echo web-1"))
		Expect(first["/bin/echo templated"].Unless).To(Equal("test web-1 = nobody"))
		Expect(first["/bin/echo static"].Unless).To(Equal("test 1 -gt 2 && test <x"))

		second, n := run("web-2", nil)
		Expect(n).To(Equal(int64(2)), "only the two templated resources' properties, with the new facts")
		Expect(second).To(HaveKey("/bin/echo web-2"))
		Expect(second).ToNot(HaveKey("/bin/echo web-1"))
		Expect(second["/bin/echo templated"].Unless).To(Equal("test web-2 = nobody"))
		Expect(second["/bin/echo static"]).To(Equal(first["/bin/echo static"]))
		Expect(second["/bin/echo static"]).ToNot(BeIdenticalTo(first["/bin/echo static"]), "each run has its own value")
	})

	It("gives each run its own copy of the value decoded once: a change made to one run's is not seen by the next", func() {
		run("web-1", func(p *exectype.Properties) {
			p.Sensitive = true
			p.Command = "/bin/false"
			p.Environment = append(p.Environment, "CHANGED=1")
		})
		second, n := run("web-1", nil)
		Expect(n).To(Equal(int64(1)), "the unless template only: the name made from the same facts is planned the same, without a template")
		static := second["/bin/echo static"]
		Expect(static.Sensitive).To(BeFalse())
		Expect(static.Command).To(Equal("/bin/echo static"))
		Expect(static.Environment).To(BeEmpty())
	})

	It("shares no value between concurrent runs (checked under -race)", func() {
		run("web-1", nil)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				defer GinkgoRecover()
				run("web-1", func(p *exectype.Properties) {
					p.Command += " again"
					p.Environment = append(p.Environment, "RUN=1")
				})
			})
		}
		wg.Wait()
		last, _ := run("web-1", nil)
		Expect(last["/bin/echo static"].Command).To(Equal("/bin/echo static"))
	})
})
