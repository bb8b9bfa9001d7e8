package orchestrator

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("DiffGroups", func() {
	event := func(name string, d *protocol.Diff) *protocol.TransactionEvent {
		ev := protocol.NewTransactionEvent("e", "file", name, "")
		ev.Changed, ev.Noop, ev.Diff = true, true, d
		return ev
	}
	host := func(id, content string) HostResult {
		return HostResult{Identity: id, Outcome: OutcomeWouldChange, Events: []*protocol.TransactionEvent{
			event("/srv/"+id+"/motd", &protocol.Diff{Content: content}),
		}}
	}

	It("replaces the identity wherever it stands as a token, after a tab too", func() {
		r := &Result{Hosts: []HostResult{
			host("web-01", "-old\n+name:\tweb-01\n"),
			host("web-02", "-old\n+name:\tweb-02\n"),
			host("web-03", "-old\n+name:\tweb-033\n"),
		}}
		g := DiffGroups(r)
		Expect(g).To(HaveLen(2))
		Expect(g[0].Hosts).To(Equal([]string{"web-01", "web-02"}))
		Expect(g[0].Resource).To(Equal("file#/srv/<host>/motd"))
		Expect(g[0].Diff.Content).To(Equal("-old\n+name:\t<host>\n"))
		Expect(g[1].Hosts).To(Equal([]string{"web-03"}))
		Expect(g[1].Diff.Content).To(Equal("-old\n+name:\tweb-033\n"), "not a whole token")
	})

	It("replaces the values of the facts the templates name, and only those", func() {
		r := &Result{
			TemplateFacts: []string{"os", "host.cpus"},
			facts: map[string]map[string]any{
				"web-01": {"os": "debian", "role": "db", "host": map[string]any{"cpus": float64(16)}},
				"web-02": {"os": "rhel", "role": "db", "host": map[string]any{"cpus": float64(32)}},
				"web-03": {"os": "rhel", "role": "web", "host": map[string]any{"cpus": float64(32)}},
			},
			Hosts: []HostResult{
				host("web-01", "+on debian with 16 cpus, db\n"),
				host("web-02", "+on rhel with 32 cpus, db\n"),
				host("web-03", "+on rhel with 32 cpus, web\n"),
			},
		}
		g := DiffGroups(r)
		Expect(g).To(HaveLen(2))
		Expect(g[0].Hosts).To(Equal([]string{"web-01", "web-02"}))
		Expect(g[0].Diff.Content).To(Equal("+on <facts.os> with <facts.host.cpus> cpus, db\n"))
		Expect(g[1].Hosts).To(Equal([]string{"web-03"}), "role is not read by the templates: db and web differ")
	})

	It("leaves out events without a diff and keeps outcomes apart", func() {
		stable := protocol.NewTransactionEvent("e", "file", "/a", "")
		failed := event("/b", &protocol.Diff{Changes: []protocol.Change{{Field: "mode", From: "0600", To: "0644"}}})
		failed.Failed = true
		changed := event("/b", &protocol.Diff{Changes: []protocol.Change{{Field: "mode", From: "0600", To: "0644"}}})
		r := &Result{Hosts: []HostResult{
			{Identity: "h-1", Events: []*protocol.TransactionEvent{stable, failed}},
			{Identity: "h-2", Events: []*protocol.TransactionEvent{nil, changed}},
		}}
		g := DiffGroups(r)
		Expect(g).To(HaveLen(2))
		Expect([]string{g[0].Outcome, g[1].Outcome}).To(ConsistOf("failed", "would_change"))
	})

	It("finds the facts templates name", func() {
		Expect(TemplateFacts([]byte(`{"name":"/srv/{{ lookup('facts.identity') }}","content":"{{ facts.host.info.os }} {{facts.os}}"}`), []byte("facts.os"))).
			To(Equal([]string{"host.info.os", "identity", "os"}))
	})
})
