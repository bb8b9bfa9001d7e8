package manifest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/applytype"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// The apply resource as CCM documents it: docs/content/resources/apply.md
// and docs/content/design/apply/_index.md of github.com/choria-io/ccm.
var _ = Describe("The apply resource", func() {
	var dir string
	BeforeEach(func() { dir = GinkgoT().TempDir() })

	write := func(rel, doc string) string {
		GinkgoHelper()
		p := filepath.Join(dir, rel)
		Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
		Expect(os.WriteFile(p, []byte(strings.ReplaceAll(doc, "DIR", dir)), 0o644)).To(Succeed())
		return p
	}
	run := func(path string, opts manifest.RunOptions) *manifest.Report {
		GinkgoHelper()
		m, err := manifest.Load(path)
		Expect(err).ToNot(HaveOccurred())
		rep, err := manifest.Run(GinkgoT().Context(), realEngine(), m, opts)
		Expect(err).ToNot(HaveOccurred())
		return rep
	}
	read := func(rel string) string {
		GinkgoHelper()
		b, err := os.ReadFile(filepath.Join(dir, rel))
		Expect(err).ToNot(HaveOccurred())
		return string(b)
	}

	// The child's templates read the data the apply resource passes
	// ("Passing data to child manifests").
	const child = `
data: {port: 80, log_level: warn}
ccm:
  resources:
    - file:
        - DIR/out/app.conf:
            content: "port={{ lookup('data.port') }} level={{ lookup('data.log_level') }}"
            owner: root
            group: root
            mode: "0644"
`

	It("runs the child manifest, relative to the parent's directory, with the resource's data merged over the child's", func() {
		Expect(os.MkdirAll(filepath.Join(dir, "out"), 0o755)).To(Succeed())
		write("app/manifest.yaml", child)
		parent := write("manifest.yaml", `
ccm:
  resources:
    - apply:
        - app/manifest.yaml:
            data:
              port: 8080
`)
		rep := run(parent, manifest.RunOptions{})
		Expect(read("out/app.conf")).To(Equal("port=8080 level=warn"))
		Expect(rep.Events).To(HaveLen(2))
		Expect(rep.Events[0].ResourceID()).To(Equal("file#" + dir + "/out/app.conf"))
		ev := rep.Events[1]
		Expect(ev.ResourceID()).To(Equal("apply#app/manifest.yaml"))
		Expect(ev.Changed).To(BeTrue())
		Expect(ev.Failed).To(BeFalse())
		st, ok := ev.Status.(*protocol.ApplyState)
		Expect(ok).To(BeTrue())
		Expect(st.ResourceCount).To(Equal(1))
		Expect(st.ChangedCount).To(Equal(1))
		Expect(st.Protocol).To(Equal("io.choria.ccm.v1.resource.apply.state"))

		rep = run(parent, manifest.RunOptions{})
		Expect(rep.Events[1].Changed).To(BeFalse())
	})

	It("lets the run's own data win over the resource's data", func() {
		Expect(os.MkdirAll(filepath.Join(dir, "out"), 0o755)).To(Succeed())
		write("app/manifest.yaml", child)
		parent := write("manifest.yaml", `
ccm:
  resources:
    - apply:
        - app/manifest.yaml: {data: {port: 8080}}
`)
		run(parent, manifest.RunOptions{Data: map[string]any{"port": 9090}})
		Expect(read("out/app.conf")).To(Equal("port=9090 level=warn"))
	})

	DescribeTable("noop only strengthens: the child runs in noop when the parent or the resource asks",
		func(parentNoop, resourceNoop, wantWritten bool) {
			Expect(os.MkdirAll(filepath.Join(dir, "out"), 0o755)).To(Succeed())
			write("app/manifest.yaml", child)
			noop := "false"
			if resourceNoop {
				noop = "true"
			}
			parent := write("manifest.yaml", `
ccm:
  resources:
    - apply:
        - app/manifest.yaml: {noop: `+noop+`}
`)
			rep := run(parent, manifest.RunOptions{Noop: parentNoop})
			if wantWritten {
				Expect(filepath.Join(dir, "out/app.conf")).To(BeAnExistingFile())
				return
			}
			Expect(filepath.Join(dir, "out/app.conf")).ToNot(BeAnExistingFile())
			ev := rep.Events[1]
			Expect(ev.Noop).To(BeTrue())
			Expect(ev.Changed).To(BeTrue(), "under noop: would change")
			Expect(ev.NoopMessage).To(Equal("Would have changed 1 of 1 resources of app/manifest.yaml"))
			Expect(rep.Events[0].Noop).To(BeTrue())
		},
		Entry("parent noop, noop: false -> noop", true, false, false),
		Entry("parent noop, noop: true -> noop", true, true, false),
		Entry("parent normal, noop: true -> noop", false, true, false),
		Entry("parent normal, noop: false -> normal", false, false, true),
	)

	It("resolves nested applies relative to each manifest's own directory", func() {
		write("sub/lib/manifest.yaml", `
ccm:
  resources:
    - exec:
        - "/bin/sh -c 'echo nested >> DIR/nested'": {}
`)
		write("sub/manifest.yaml", `
ccm:
  resources:
    - apply:
        - lib/manifest.yaml: {}
`)
		parent := write("manifest.yaml", `
ccm:
  resources:
    - apply:
        - sub/manifest.yaml: {}
`)
		rep := run(parent, manifest.RunOptions{})
		Expect(read("nested")).To(Equal("nested\n"))
		Expect(rep.Events).To(HaveLen(3))
		Expect(rep.Events[1].ResourceID()).To(Equal("apply#lib/manifest.yaml"))
		Expect(rep.Events[2].ResourceID()).To(Equal("apply#sub/manifest.yaml"))
	})

	It("with allow_apply false refuses a child holding apply resources before any of its resources runs", func() {
		write("vendor/manifest.yaml", `
ccm:
  resources:
    - exec:
        - "/bin/sh -c 'echo ran >> DIR/vendor-ran'": {}
    - apply:
        - other.yaml: {}
`)
		parent := write("manifest.yaml", `
ccm:
  resources:
    - apply:
        - vendor/manifest.yaml: {allow_apply: false}
`)
		rep := run(parent, manifest.RunOptions{})
		Expect(rep.Events).To(HaveLen(1))
		Expect(rep.Events[0].Failed).To(BeTrue())
		Expect(rep.Events[0].Errors).To(ContainElement(ContainSubstring(applytype.ErrNestedApply.Error())))
		Expect(filepath.Join(dir, "vendor-ran")).ToNot(BeAnExistingFile())
	})

	// Issue 39, finding 7: a child was judged only when it ran, so a
	// manifest whose child the policy refuses ran in part (the parent's
	// resources before the apply) and answered failed. Children are now
	// read, rendered and judged with the parent before anything runs.
	It("judges every child's resources with the run's guard before anything runs: a refused one refuses the whole manifest", func() {
		write("child/manifest.yaml", `
ccm:
  resources:
    - file:
        - DIR/child-file: {content: "guard-canary-3f", owner: root, group: root, mode: "0644"}
    - apply:
        - grandchild/manifest.yaml: {}
`)
		write("child/grandchild/manifest.yaml", `
ccm:
  resources:
    - exec:
        - "/bin/sh -c 'echo guard-canary-3f > DIR/child-exec'": {}
`)
		parent := write("manifest.yaml", `
ccm:
  resources:
    - file:
        - DIR/parent-file: {content: "guard-canary-3f", owner: root, group: root, mode: "0644"}
    - apply:
        - child/manifest.yaml: {}
`)
		var judged []string
		guard := func(p *engine.Prepared) error {
			judged = append(judged, p.Ref())
			if p.Type.Name() == "exec" {
				return fmt.Errorf("%w: exec is not allowed", resources.ErrForbidden)
			}
			return nil
		}
		m, err := manifest.Load(parent)
		Expect(err).ToNot(HaveOccurred())
		var events int
		rep, err := manifest.Run(GinkgoT().Context(), realEngine(), m, manifest.RunOptions{Guard: guard,
			OnEvent: func(*protocol.TransactionEvent) { events++ }})
		Expect(err).To(MatchError(resources.ErrForbidden))
		Expect(err.Error()).To(And(ContainSubstring("apply#child/manifest.yaml"), ContainSubstring("apply grandchild/manifest.yaml"),
			ContainSubstring("exec is not allowed")))
		Expect(rep).To(BeNil())
		Expect(events).To(BeZero())
		Expect(judged).To(ContainElements("file#"+dir+"/parent-file", "apply#child/manifest.yaml", "file#"+dir+"/child-file", ContainSubstring("exec#")))
		for _, f := range []string{"parent-file", "child-file", "child-exec"} {
			Expect(filepath.Join(dir, f)).ToNot(BeAnExistingFile(), f)
		}
	})

	It("runs the child as it was read and judged, and refuses a child path that a file resource of the same manifest writes", func() {
		child := write("child/manifest.yaml", `
ccm:
  resources:
    - file:
        - DIR/child-file: {content: "judged", owner: root, group: root, mode: "0644"}
`)
		parent := write("manifest.yaml", `
ccm:
  resources:
    - file:
        - `+child+`:
            content: |
              ccm:
                resources:
                  - exec:
                      - "/bin/touch `+dir+`/swapped-canary": {}
            owner: root
            group: root
            mode: "0644"
    - apply:
        - child/manifest.yaml: {}
`)
		m, err := manifest.Load(parent)
		Expect(err).ToNot(HaveOccurred())
		_, err = manifest.Run(GinkgoT().Context(), realEngine(), m, manifest.RunOptions{})
		Expect(err).To(MatchError(resources.ErrInvalid))
		Expect(err.Error()).To(ContainSubstring("the child manifest " + child + " is written by file#" + child + " of the same manifest"))
		Expect(filepath.Join(dir, "swapped-canary")).ToNot(BeAnExistingFile())
		Expect(read("child/manifest.yaml")).To(ContainSubstring("judged"), "nothing ran, so the child was not rewritten")
	})

	It("stops recursion after ten levels", func() {
		parent := write("manifest.yaml", `
ccm:
  resources:
    - apply:
        - manifest.yaml: {}
`)
		rep := run(parent, manifest.RunOptions{})
		last := rep.Events[0]
		Expect(last.Failed).To(BeTrue())
		Expect(last.Errors).To(ContainElement(ContainSubstring("more than 10 levels")))
		Expect(rep.Events).To(HaveLen(applytype.MaxDepth + 1))
		Expect(rep.Events[applytype.MaxDepth].Failed).To(BeTrue(), "every level reports its child's failure")
	})

	It("fails when a child resource fails, and refreshes subscribers of apply#name only when the child changed", func() {
		write("config/manifest.yaml", `
ccm:
  resources:
    - exec:
        - "/bin/sh -c 'echo once >> DIR/config-ran'":
            creates: DIR/config-ran
`)
		parent := write("manifest.yaml", `
ccm:
  resources:
    - apply:
        - config/manifest.yaml: {}
    - exec:
        - notify:
            command: "/bin/sh -c 'echo notified >> DIR/notified'"
            refreshonly: true
            subscribe: [apply#config/manifest.yaml]
`)
		run(parent, manifest.RunOptions{})
		Expect(read("notified")).To(Equal("notified\n"))
		run(parent, manifest.RunOptions{})
		Expect(read("notified")).To(Equal("notified\n"), "the child changed nothing the second time")

		failing := write("bad/manifest.yaml", `
ccm:
  resources:
    - exec:
        - /bin/false: {}
`)
		_ = failing
		top := write("top.yaml", `
ccm:
  resources:
    - apply:
        - bad/manifest.yaml: {}
`)
		rep := run(top, manifest.RunOptions{})
		ev := rep.Events[len(rep.Events)-1]
		Expect(ev.Failed).To(BeTrue())
		Expect(ev.Errors).To(ContainElement("child manifest had 1 failed resources"))
		Expect(rep.Summary.Failed).To(Equal(2))
	})
})
