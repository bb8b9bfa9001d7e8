package manifest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// realEngine applies resources with the built-in providers and real processes.
func realEngine() *engine.Engine {
	GinkgoHelper()
	reg, err := providers.Builtin(providers.Options{Runner: runner.Exec{}})
	Expect(err).ToNot(HaveOccurred())
	return engine.New(reg)
}

// event finds the event of ref.
func event(rep *manifest.Report, ref string) *protocol.TransactionEvent {
	GinkgoHelper()
	for _, ev := range rep.Events {
		if ev.ResourceID() == ref {
			return ev
		}
	}
	Fail("no event for " + ref)
	return nil
}

func lines(path string) []string {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	Expect(err).ToNot(HaveOccurred())
	return strings.Fields(string(b))
}

var _ = Describe("Run", func() {
	var (
		dir   string
		eng   *engine.Engine
		facts map[string]any
	)

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		eng = realEngine()
		facts = map[string]any{"os": "debian", "hostname": "web1"}
	})

	// apply parses doc (%[1]s is the temp dir) and runs it.
	apply := func(doc string, noop bool, data map[string]any) (*manifest.Report, error) {
		GinkgoHelper()
		m, err := manifest.Parse([]byte(strings.ReplaceAll(doc, "DIR", dir)), manifest.ParseOptions{WorkingDir: dir})
		Expect(err).ToNot(HaveOccurred())
		return manifest.Run(GinkgoT().Context(), eng, m, manifest.RunOptions{Noop: noop, Facts: facts, Data: data})
	}
	mustApply := func(doc string, noop bool, data map[string]any) *manifest.Report {
		GinkgoHelper()
		rep, err := apply(doc, noop, data)
		Expect(err).ToNot(HaveOccurred())
		return rep
	}

	It("applies resources in declaration order, with real files and processes", func() {
		rep := mustApply(`
ccm:
  resources:
    - exec:
        - "/bin/sh -c 'echo one >> DIR/order'": {}
    - file:
        - DIR/f: {content: "x", owner: root, group: root, mode: "0600"}
    - exec:
        - "/bin/sh -c 'test -f DIR/f && echo two >> DIR/order'": {}
        - "/bin/sh -c 'echo three >> DIR/order'": {}
`, false, nil)
		Expect(lines(filepath.Join(dir, "order"))).To(Equal([]string{"one", "two", "three"}))
		Expect(rep.Events).To(HaveLen(4))
		Expect(rep.Events[1].ResourceID()).To(Equal("file#" + dir + "/f"))
		Expect(rep.Summary).To(haveCounts(4, 0, 4, 0, 0, 0))
	})

	Describe("subscribe", func() {
		const doc = `
data: {v: "1"}
ccm:
  resources:
    - file:
        - defaults: {owner: root, group: root, mode: "0644"}
        - DIR/conf: {content: "{{ lookup('data.v') }}", alias: conf}
        - DIR/other: {content: "static"}
    - exec:
        - refresh-conf:
            command: "/bin/sh -c 'echo ran >> DIR/refreshes'"
            refreshonly: true
            subscribe: [file#conf]
    - file:
        - DIR/watcher: {content: "w", owner: root, group: root, mode: "0644", subscribe: [file#conf]}
`
		It("refreshes only when a subscribed resource really changed", func() {
			refreshes := filepath.Join(dir, "refreshes")

			rep := mustApply(doc, false, nil)
			Expect(lines(refreshes)).To(Equal([]string{"ran"}))
			ex := event(rep, "exec#refresh-conf")
			Expect(ex.Changed).To(BeTrue())
			Expect(ex.Refreshed).To(BeTrue())
			Expect(rep.Summary.Refreshed).To(Equal(1))

			By("running again with nothing to change: no refresh")
			rep = mustApply(doc, false, nil)
			Expect(lines(refreshes)).To(Equal([]string{"ran"}))
			ex = event(rep, "exec#refresh-conf")
			Expect(ex.Changed).To(BeFalse())
			Expect(ex.Refreshed).To(BeFalse())
			Expect(rep.Summary).To(haveCounts(4, 4, 0, 0, 0, 0))

			By("changing another file the exec does not subscribe to: no refresh")
			Expect(os.WriteFile(filepath.Join(dir, "other"), []byte("drift"), 0o644)).To(Succeed())
			rep = mustApply(doc, false, nil)
			Expect(event(rep, "file#"+dir+"/other").Changed).To(BeTrue())
			Expect(lines(refreshes)).To(Equal([]string{"ran"}))

			By("changing the subscribed file: refresh")
			rep = mustApply(doc, false, map[string]any{"v": "2"})
			Expect(os.ReadFile(filepath.Join(dir, "conf"))).To(Equal([]byte("2")))
			Expect(lines(refreshes)).To(Equal([]string{"ran", "ran"}))
			Expect(event(rep, "exec#refresh-conf").Refreshed).To(BeTrue())
		})

		It("under noop reports would refresh without claiming a change or changing anything", func() {
			mustApply(doc, false, nil)
			refreshes := filepath.Join(dir, "refreshes")
			Expect(lines(refreshes)).To(Equal([]string{"ran"}))

			rep := mustApply(doc, true, map[string]any{"v": "2"})
			Expect(os.ReadFile(filepath.Join(dir, "conf"))).To(Equal([]byte("1")), "noop changes nothing")
			Expect(lines(refreshes)).To(Equal([]string{"ran"}), "noop runs nothing")

			conf := event(rep, "file#"+dir+"/conf")
			Expect(conf.Noop).To(BeTrue())
			Expect(conf.Changed).To(BeTrue(), "the file would change")

			ex := event(rep, "exec#refresh-conf")
			Expect(ex.Noop).To(BeTrue())
			Expect(ex.Refreshed).To(BeTrue())
			Expect(ex.NoopMessage).To(Equal("Would have executed via subscribe (would refresh: file#conf would change)"))
			Expect(ex.Status.Common().NoopMessage).To(Equal(ex.NoopMessage))

			watcher := event(rep, "file#"+dir+"/watcher")
			Expect(watcher.Changed).To(BeFalse(), "a stable subscriber is not claimed to change")
			Expect(watcher.Refreshed).To(BeFalse())
			Expect(watcher.NoopMessage).To(BeEmpty())
			Expect(watcher.Outcome()).To(Equal("stable"))
		})
	})

	Describe("require", func() {
		It("skips resources whose requirement failed or was skipped, without calling their provider", func() {
			rep := mustApply(`
ccm:
  resources:
    - exec:
        - /bin/false: {alias: broken}
    - file:
        - DIR/needs-broken: {content: x, owner: root, group: root, mode: "0644", require: [exec#broken]}
    - exec:
        - "/bin/touch DIR/needs-skipped": {require: ["file#DIR/needs-broken"]}
        - "/bin/touch DIR/independent": {}
        - "/bin/touch DIR/needs-independent": {require: ["exec#/bin/touch DIR/independent"]}
`, false, nil)
			Expect(event(rep, "exec#/bin/false").Failed).To(BeTrue())

			skipped := event(rep, "file#"+dir+"/needs-broken")
			Expect(skipped.Skipped).To(BeTrue())
			Expect(skipped.Failed).To(BeFalse())
			Expect(skipped.UnmetRequirements).To(Equal([]string{"exec#broken"}))
			Expect(skipped.Errors).To(BeEmpty())
			Expect(skipped.Status).To(BeNil(), "the provider was never asked")
			Expect(filepath.Join(dir, "needs-broken")).ToNot(BeAnExistingFile())

			second := event(rep, "exec#/bin/touch "+dir+"/needs-skipped")
			Expect(second.Skipped).To(BeTrue())
			Expect(second.UnmetRequirements).To(Equal([]string{"file#" + dir + "/needs-broken"}))
			Expect(filepath.Join(dir, "needs-skipped")).ToNot(BeAnExistingFile())

			Expect(filepath.Join(dir, "independent")).To(BeAnExistingFile())
			Expect(filepath.Join(dir, "needs-independent")).To(BeAnExistingFile())
			Expect(rep.Summary).To(haveCounts(5, 0, 2, 1, 2, 0))
		})

		It("treats a resource skipped by its control condition as unmet", func() {
			rep := mustApply(`
ccm:
  resources:
    - exec:
        - "/bin/touch DIR/plan9": {control: {if: "facts.os == 'plan9'"}}
        - "/bin/touch DIR/after": {require: ["exec#/bin/touch DIR/plan9"]}
`, false, nil)
			Expect(event(rep, "exec#/bin/touch "+dir+"/after").UnmetRequirements).To(HaveLen(1))
			Expect(filepath.Join(dir, "after")).ToNot(BeAnExistingFile())
		})

		It("is an error naming a reference no resource has, before anything changes", func() {
			_, err := apply(`
ccm:
  resources:
    - exec:
        - "/bin/touch DIR/first": {}
    - service:
        - nginx: {require: [package#nginx]}
`, false, nil)
			Expect(err).To(MatchError(resources.ErrInvalid))
			Expect(err).To(MatchError(manifest.ErrUnknownReference))
			Expect(err.Error()).To(Equal("resources[1] service#nginx: require package#nginx: no resource in the manifest is package#nginx"))
			Expect(filepath.Join(dir, "first")).ToNot(BeAnExistingFile())
		})
	})

	It("refuses an invalid resource anywhere before changing anything", func() {
		_, err := apply(`
ccm:
  resources:
    - exec:
        - "/bin/touch DIR/first": {}
    - file:
        - DIR/bad: {content: x, owner: root, group: root, mode: "0888"}
`, false, nil)
		Expect(err).To(MatchError(resources.ErrInvalid))
		Expect(err.Error()).To(HavePrefix("resources[1] file#" + dir + "/bad: "))
		Expect(err.Error()).To(ContainSubstring(`property mode: "0888"`))
		var ie *resources.InvalidError
		Expect(errors.As(err, &ie)).To(BeTrue())
		Expect(ie.Field).To(Equal("mode"))
		Expect(filepath.Join(dir, "first")).ToNot(BeAnExistingFile())
	})

	It("stops after the first failure with fail_on_error and marks the rest skipped", func() {
		rep := mustApply(`
ccm:
  fail_on_error: true
  post_message: never shown
  resources:
    - exec:
        - "/bin/touch DIR/before": {}
        - /bin/false: {}
        - "/bin/touch DIR/after": {}
    - file:
        - DIR/also-after: {content: x, owner: root, group: root, mode: "0644"}
`, false, nil)
		Expect(filepath.Join(dir, "before")).To(BeAnExistingFile())
		Expect(filepath.Join(dir, "after")).ToNot(BeAnExistingFile())
		Expect(filepath.Join(dir, "also-after")).ToNot(BeAnExistingFile())
		for _, ref := range []string{"exec#/bin/touch " + dir + "/after", "file#" + dir + "/also-after"} {
			ev := event(rep, ref)
			Expect(ev.Skipped).To(BeTrue())
			Expect(ev.Failed).To(BeFalse())
			Expect(ev.UnmetRequirements).To(BeEmpty())
			Expect(ev.Errors).To(Equal([]string{"not applied: fail_on_error is set and exec#/bin/false failed"}))
		}
		// Counted as CCM counts them: only the resources that ran.
		Expect(rep.Summary).To(haveCounts(2, 0, 1, 1, 0, 0))
		Expect(rep.Summary.NotApplied).To(Equal(2))
		Expect(rep.Events).To(HaveLen(4))
		Expect(rep.PostMessage).To(BeEmpty())
	})

	It("keeps going after a failure without fail_on_error", func() {
		rep := mustApply(`
ccm:
  resources:
    - exec:
        - /bin/false: {}
        - "/bin/touch DIR/after": {}
`, false, nil)
		Expect(filepath.Join(dir, "after")).To(BeAnExistingFile())
		Expect(rep.Summary.Failed).To(Equal(1))
		Expect(rep.Summary.Changed).To(Equal(1))
	})

	It("gives templates and control conditions the facts and the resolved data", func() {
		rep := mustApply(`
data: {motd: base, enabled: false}
hierarchy: {order: ["host:{{ lookup('facts.hostname') }}"]}
overrides: {"host:web1": {motd: "for web1", enabled: true}}
ccm:
  pre_message: "pre {{ lookup('facts.hostname') }}"
  post_message: "post {{ lookup('data.motd') }}"
  resources:
    - file:
        - defaults: {owner: root, group: root, mode: "0644"}
        - DIR/motd: {content: "{{ lookup('data.motd') }} on {{ lookup('facts.os') }}"}
        - DIR/when-enabled: {content: x, control: {if: "data.enabled"}}
        - DIR/unless-debian: {content: x, control: {unless: "facts.os == 'debian'"}}
`, false, nil)
		Expect(os.ReadFile(filepath.Join(dir, "motd"))).To(Equal([]byte("for web1 on debian")))
		Expect(filepath.Join(dir, "when-enabled")).To(BeAnExistingFile())
		Expect(filepath.Join(dir, "unless-debian")).ToNot(BeAnExistingFile())
		Expect(event(rep, "file#"+dir+"/unless-debian").Skipped).To(BeTrue())
		Expect(rep.PreMessage).To(Equal("pre web1"))
		Expect(rep.PostMessage).To(Equal("post for web1"))
	})

	It("resolves relative sources against the manifest's directory", func() {
		Expect(os.MkdirAll(filepath.Join(dir, "files"), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "files", "motd.txt"), []byte("from source\n"), 0o644)).To(Succeed())
		path := filepath.Join(dir, "site.yaml")
		Expect(os.WriteFile(path, []byte(strings.ReplaceAll(`
ccm:
  resources:
    - file:
        - DIR/out/motd: {source: files/motd.txt, owner: root, group: root, mode: "0644"}
`, "DIR", dir)), 0o644)).To(Succeed())
		Expect(os.MkdirAll(filepath.Join(dir, "out"), 0o755)).To(Succeed())

		m, err := manifest.Load(path)
		Expect(err).ToNot(HaveOccurred())
		GinkgoT().Chdir(os.TempDir())
		rep, err := manifest.Run(GinkgoT().Context(), eng, m, manifest.RunOptions{Facts: facts})
		Expect(err).ToNot(HaveOccurred())
		Expect(rep.Events[0].Errors).To(BeEmpty())
		Expect(os.ReadFile(filepath.Join(dir, "out", "motd"))).To(Equal([]byte("from source\n")))
	})

	It("reports validation first, then each event as it happens", func() {
		m, err := manifest.Parse([]byte(strings.ReplaceAll(`
ccm:
  pre_message: starting
  resources:
    - exec: [{"/bin/touch DIR/a": {}}, {"/bin/touch DIR/b": {}}]
`, "DIR", dir)), manifest.ParseOptions{})
		Expect(err).ToNot(HaveOccurred())
		var seen []string
		rep, err := manifest.Run(GinkgoT().Context(), eng, m, manifest.RunOptions{
			OnStart: func(pre string, n int) { seen = append(seen, fmt.Sprintf("start:%s:%d", pre, n)) },
			OnEvent: func(ev *protocol.TransactionEvent) { seen = append(seen, ev.Outcome()) },
		})
		Expect(err).ToNot(HaveOccurred())
		Expect(seen).To(Equal([]string{"start:starting:2", "changed", "changed"}))
		Expect(rep.Events).To(HaveLen(2))
	})

	It("marks the rest not applied when the run is stopped", func() {
		m, err := manifest.Parse([]byte(strings.ReplaceAll(`
ccm:
  resources:
    - exec: [{"/bin/touch DIR/a": {}}, {"/bin/touch DIR/b": {}}]
`, "DIR", dir)), manifest.ParseOptions{})
		Expect(err).ToNot(HaveOccurred())
		ctx, cancel := context.WithCancel(GinkgoT().Context())
		rep, err := manifest.Run(ctx, eng, m, manifest.RunOptions{OnEvent: func(*protocol.TransactionEvent) { cancel() }})
		Expect(err).ToNot(HaveOccurred())
		Expect(filepath.Join(dir, "a")).To(BeAnExistingFile())
		Expect(filepath.Join(dir, "b")).ToNot(BeAnExistingFile())
		Expect(rep.Events[1].Skipped).To(BeTrue())
		Expect(rep.Events[1].Errors).To(ConsistOf(ContainSubstring("not applied: the run was stopped")))
	})
})

// haveCounts matches a Summary's counts.
func haveCounts(total, stable, changed, failed, skipped, refreshed int) OmegaMatcher {
	return WithTransform(func(s manifest.Summary) []int {
		return []int{s.Total, s.Stable, s.Changed, s.Failed, s.Skipped, s.Refreshed}
	}, Equal([]int{total, stable, changed, failed, skipped, refreshed}))
}
