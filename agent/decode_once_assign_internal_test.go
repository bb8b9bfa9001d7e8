package agent

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("Running an assignment again", func() {
	It("decodes its resources with no template once per revision, and expands the templated ones with each run's facts", func() {
		a := watchAgent(GinkgoT().TempDir())
		s := newAssigner(a)
		b, err := parseManifest([]byte(`{"manifest":{"ccm":{"resources":[{"exec":[
			{"/bin/echo static":{"unless":"test 1 -gt 2 && test <x"}},
			{"/bin/echo {{ facts.host }}":{}}]}]}}}`))
		Expect(err).ToNot(HaveOccurred())
		as := &assigned{name: "site", revision: 3, selected: true, spec: &protocol.Assignment{Name: "site", Noop: true}, body: b}

		// run runs as once, as its schedule does, with the fact host, and
		// returns the names its events report and the decodes it made.
		run := func(host string) ([]string, int64) {
			a.facts.facts.Store(newFactSet(a.cfg.Identity, "", "", map[string]any{"host": host}))
			var reply *protocol.FleetReply
			n := decodesOf(func() { reply = a.exec.run(context.Background(), s.newRun(as, a.now())) })
			Expect(reply).ToNot(BeNil())
			Expect(reply.Error).To(BeNil())
			var names []string
			for _, ev := range reply.Events {
				names = append(names, ev.Name)
			}
			return names, n
		}
		names, first := run("web-1")
		Expect(names).To(Equal([]string{"/bin/echo static", "/bin/echo web-1"}))
		names, second := run("web-2")
		Expect(names).To(Equal([]string{"/bin/echo static", "/bin/echo web-2"}), "the templated resource sees the facts of the run")
		Expect(first).To(Equal(int64(2)), "each resource's properties, once")
		Expect(second).To(Equal(int64(1)), "the templated resource's only: the static one's value, decoded by the first run, is reused")
	})
})
