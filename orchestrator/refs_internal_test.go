package orchestrator

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
)

// event builds an event for typ#name with the given outcome.
func event(typ, name, outcome string) *protocol.TransactionEvent {
	e := ev(outcome)
	e.Type, e.Name = typ, name
	return e
}

var _ = Describe("naming events by the manifest's declarations", func() {
	decl := []DeclaredResource{
		{Type: "file", Name: "/srv/{{ lookup('facts.identity') }}"},
		{Type: "file", Name: "/srv/{{ lookup('facts.identity') }}/motd"},
		{Type: "file", Name: "/etc/motd"},
		{Type: "service", Name: "{{ lookup('data.service') }}"},
		{Type: "file", Name: "{{ lookup('data.any') }}"},
	}

	DescribeTable("picks an exact name, else the most specific template, else the event's own",
		func(typ, name, want string, order int) {
			n := manifestRefs(decl)
			Expect(n.name(event(typ, name, "stable"), false)).To(Equal(namedRef{ref: want, order: order}))
			Expect(n.name(event(typ, name, "stable"), false)).To(Equal(namedRef{ref: want, order: order}), "the cached answer is the same")
		},
		Entry("an exact name", "file", "/etc/motd", "file#/etc/motd", 2),
		Entry("a template", "file", "/srv/web1", "file#/srv/{{ lookup('facts.identity') }}", 0),
		Entry("the template with more literal text", "file", "/srv/web1/motd", "file#/srv/{{ lookup('facts.identity') }}/motd", 1),
		Entry("a whole-name template of the type", "file", "/opt/x", "file#{{ lookup('data.any') }}", 4),
		Entry("another type's template", "service", "nginx", "service#{{ lookup('data.service') }}", 3),
		Entry("nothing declared for the type", "exec", "/bin/true", "exec#/bin/true", len(decl)),
	)

	It("names an ensure request's one event by the request, and others by themselves", func() {
		n := ensureRefs("file#/srv/{{ lookup('facts.identity') }}")
		Expect(n.name(event("file", "/srv/a", "stable"), true).ref).To(Equal("file#/srv/{{ lookup('facts.identity') }}"))
		Expect(n.name(event("file", "/srv/a", "stable"), false).ref).To(Equal("file#/srv/a"))
		Expect(n.name(event("exec", "/bin/true", "stable"), true).ref).To(Equal("exec#/bin/true"))
		Expect(ensureRefs("").name(event("exec", "/bin/true", "stable"), true).ref).To(Equal("exec#/bin/true"))
	})

	It("groups a manifest's events per declared resource across hosts", func() {
		motd := "/srv/{{ lookup('facts.identity') }}/motd"
		drift := func(host string) *protocol.TransactionEvent {
			e := event("file", "/srv/"+host+"/motd", "changed")
			e.Noop = true
			e.NoopMessage = "Would have changed the content"
			return e
		}
		stable := func(host string) *protocol.TransactionEvent { return event("file", "/srv/"+host+"/motd", "stable") }
		svc := func() *protocol.TransactionEvent { return event("service", "nginx", "stable") }
		res := &Result{Noop: true, Expected: []string{"a", "b", "c", "d"}, Hosts: []HostResult{
			{Identity: "a", Outcome: OutcomeOK, Events: []*protocol.TransactionEvent{stable("a"), svc()}},
			{Identity: "b", Outcome: OutcomeWouldChange, Events: []*protocol.TransactionEvent{drift("b"), svc()}},
			{Identity: "c", Outcome: OutcomeWouldChange, Events: []*protocol.TransactionEvent{drift("c"), svc()}},
			{Identity: "d", Outcome: OutcomeFailed, Error: &protocol.Error{Code: protocol.CodeBadRequest, Message: "manifest: broken"}, Events: []*protocol.TransactionEvent{}},
		}}
		res.summarize(manifestRefs([]DeclaredResource{{Type: "file", Name: motd}, {Type: "service", Name: "nginx"}}))

		stableMotd := Group{Resource: "file#" + motd, Outcome: "stable", Hosts: []string{"a"}, Count: 1}
		driftMotd := Group{Resource: "file#" + motd, Outcome: "would_change", Message: "Would have changed the content", Hosts: []string{"b", "c"}, Count: 2}
		stableSvc := Group{Resource: "service#nginx", Outcome: "stable", Hosts: []string{"a", "b", "c"}, Count: 3}
		refused := Group{Outcome: GroupError, Message: "bad_request: manifest: broken", Hosts: []string{"d"}, Count: 1}
		Expect(res.Groups).To(Equal([]Group{stableMotd, stableSvc, driftMotd, refused}))
		Expect(res.Resources).To(Equal([]ResourceResult{
			{Resource: "file#" + motd, Counts: ResourceCounts{Stable: 1, WouldChange: 2}, Groups: []Group{stableMotd, driftMotd}},
			{Resource: "service#nginx", Counts: ResourceCounts{Stable: 3}, Groups: []Group{stableSvc}},
		}))
		Expect(res.Summary).To(Equal(Summary{
			Hosts:     HostCounts{OK: 1, WouldChange: 2, Failed: 1},
			Resources: ResourceCounts{Stable: 4, WouldChange: 2},
		}))
		Expect(res.ExitCode).To(Equal(protocol.ExitFailed))
	})

	It("lists a host once in a group when a template names several of its resources", func() {
		res := &Result{Expected: []string{"a"}, Hosts: []HostResult{
			{Identity: "a", Outcome: OutcomeChanged, Events: []*protocol.TransactionEvent{event("file", "/srv/x", "changed"), event("file", "/srv/y", "changed")}},
		}}
		res.summarize(manifestRefs([]DeclaredResource{{Type: "file", Name: "/srv/{{ lookup('data.names') }}"}}))
		Expect(res.Groups).To(Equal([]Group{{Resource: "file#/srv/{{ lookup('data.names') }}", Outcome: "changed", Hosts: []string{"a"}, Count: 1}}))
		Expect(res.Resources[0].Counts).To(Equal(ResourceCounts{Changed: 2}))
	})
})

var _ = Describe("reading a manifest's declarations", func() {
	It("lists the resources of list and single-object items in order, names unexpanded, defaults left out", func() {
		// The manifest package parses it; the agents judge invalid manifests.
		doc := `{"data": {"x": 1}, "ccm": {"resources": [
			{"file": [{"defaults": {"owner": "root"}}, {"/srv/{{ lookup('facts.identity') }}": {"ensure": "directory"}}, {"/etc/motd": {}}]},
			{"package": {"name": ["zsh", "vim"], "ensure": "present"}},
			{"service": {"name": "nginx"}}
		]}}`
		Expect(declaredResources(&manifest.Bundle{Manifest: json.RawMessage(doc)})).To(Equal([]DeclaredResource{
			{Type: "file", Name: "/srv/{{ lookup('facts.identity') }}"},
			{Type: "file", Name: "/etc/motd"},
			{Type: "package", Name: "zsh"},
			{Type: "package", Name: "vim"},
			{Type: "service", Name: "nginx"},
		}))
	})

	It("gives nothing for a document it cannot read", func() {
		Expect(declaredResources(nil)).To(BeEmpty())
		Expect(declaredResources(&manifest.Bundle{Manifest: json.RawMessage(`[1]`)})).To(BeEmpty())
		Expect(declaredResources(&manifest.Bundle{Manifest: json.RawMessage(`{"ccm": {}}`)})).To(BeEmpty())
	})
})
