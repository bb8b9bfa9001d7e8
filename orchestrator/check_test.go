package orchestrator_test

import (
	"context"
	"errors"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
)

var _ = Describe("CheckEnsure", func() {
	file := func(extra map[string]any) map[string]any {
		p := map[string]any{"name": "/etc/motd", "owner": "root", "group": "root", "mode": "0644"}
		for k, v := range extra {
			p[k] = v
		}
		return p
	}
	check := func(typ string, props map[string]any) error {
		e, err := protocol.NewEnsureRequest(typ, props)
		Expect(err).NotTo(HaveOccurred())
		return orchestrator.CheckEnsure(e)
	}

	DescribeTable("refuses what no agent would accept, in one line",
		func(typ string, props map[string]any, want string) {
			err := check(typ, props)
			Expect(err).To(MatchError(want))
			Expect(errors.Is(err, resources.ErrInvalid)).To(BeTrue())
		},
		Entry("an unknown type", "fiel", map[string]any{"name": "/x"},
			`invalid resource: unknown resource type "fiel" (known: apply, archive, exec, file, group, package, scaffold, service, user)`),
		Entry("an unknown property, as written", "file", file(map[string]any{"Owner": "root"}),
			`file#/etc/motd: invalid resource: unknown property "Owner"`),
		Entry("an unknown control key", "file", file(map[string]any{"control": map[string]any{"iff": "true"}}),
			`file#/etc/motd: invalid resource: unknown property "control.iff"`),
		Entry("a wrong type", "file", file(map[string]any{"force": "yes"}),
			`file#/etc/motd: invalid resource: property "force": expected true or false, got string`),
		Entry("force with ensure present, as CCM refuses it", "file", file(map[string]any{"ensure": "present", "content": "hi", "force": true}),
			`file#/etc/motd: invalid resource: property force: true is only valid with ensure absent, not present`),
		Entry("force with the default ensure", "file", file(map[string]any{"force": true}),
			`file#/etc/motd: invalid resource: property force: true is only valid with ensure absent, not present`),
		Entry("force with ensure directory", "file", file(map[string]any{"ensure": "directory", "force": true}),
			`file#/etc/motd: invalid resource: property force: true is only valid with ensure absent, not directory`),
		Entry("a bad mode beside a templated content", "file", file(map[string]any{"mode": "0888", "content": "{{ lookup('facts.identity') }}"}),
			`file#/etc/motd: invalid resource: property mode: "0888" is not an octal number: invalid digit '8'`),
		Entry("a bad mode beside a templated path", "file", file(map[string]any{"mode": "0888", "name": "/srv/{{ lookup('facts.identity') }}/motd"}),
			`file#/srv/{{ lookup('facts.identity') }}/motd: invalid resource: property mode: "0888" is not an octal number: invalid digit '8'`),
		Entry("a provider the type lacks", "package", map[string]any{"name": "nginx", "provider": "yum"},
			`package#nginx: invalid resource: unknown provider "yum" for package (known: apt, dnf)`),
		Entry("a template that does not parse", "file", file(map[string]any{"content": "hi {{ 1 + }}"}),
			`file#/etc/motd: invalid resource: property content: expression failed: "1 +": unexpected token EOF (1:3)`),
	)

	DescribeTable("decodes the properties as strictly as the agents do",
		func(raw string, want string) {
			e := &protocol.EnsureRequest{Protocol: protocol.EnsureRequestProtocol, Type: "file", Properties: []byte(raw)}
			err := orchestrator.CheckEnsure(e)
			Expect(err).To(MatchError(ContainSubstring(want)))
			Expect(errors.Is(err, resources.ErrInvalid)).To(BeTrue())
		},
		Entry("a key given twice", `{"name":"/etc/motd","name":"/etc/shadow"}`, `"name"`),
		Entry("invalid UTF-8", "{\"name\":\"/etc/motd\xff\"}", "UTF-8"),
	)

	DescribeTable("leaves to the agents what depends on their facts",
		func(typ string, props map[string]any) {
			Expect(check(typ, props)).To(Succeed())
		},
		Entry("a path that is one template", "file", file(map[string]any{"name": "{{ lookup('facts.motd') }}"})),
		Entry("a mode that is one template", "file", file(map[string]any{"mode": "{{ lookup('facts.mode') }}"})),
		Entry("a mode that mixes text and a template", "file", file(map[string]any{"mode": "0{{ lookup('facts.mode') }}"})),
		Entry("a list that is one template", "file", file(map[string]any{"require": "{{ lookup('facts.reqs') }}"})),
		Entry("a templated provider", "package", map[string]any{"name": "nginx", "provider": "{{ lookup('facts.pkg') }}"}),
		Entry("a condition on facts", "service", map[string]any{"name": "nginx", "control": map[string]any{"if": "facts.os == 'debian'"}}),
		Entry("a mode that is one ${ } template", "file", file(map[string]any{"mode": "${ Facts.mode }"})),
		Entry("a mode that mixes text and a ${ } template", "file", file(map[string]any{"mode": "0${ Facts.mode }"})),
		Entry("a list that is one ${ } template", "file", file(map[string]any{"require": "${ Data.reqs }"})),
	)

	It("is applied by Run before anything is sent", func() {
		e, err := protocol.NewEnsureRequest("file", file(map[string]any{"mode": "0888"}))
		Expect(err).NotTo(HaveOccurred())
		_, err = orchestrator.New(nil).Run(context.Background(), orchestrator.Request{Ensure: e})
		Expect(err).To(MatchError(orchestrator.ErrInvalid))
		Expect(err).To(MatchError(ContainSubstring(`property mode: "0888"`)))
	})
})

var _ = Describe("CheckManifest", func() {
	It("accepts every example manifest", func() {
		paths, err := filepath.Glob("../examples/*.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(paths).NotTo(BeEmpty())
		for _, p := range paths {
			m, err := manifest.Load(p)
			Expect(err).NotTo(HaveOccurred(), p)
			Expect(orchestrator.CheckManifest(m)).To(Succeed(), p)
		}
	})

	DescribeTable("refuses, naming the resource as declared, what no agent would accept",
		func(doc, want string) {
			m, err := manifest.Parse([]byte(doc), manifest.ParseOptions{})
			Expect(err).NotTo(HaveOccurred())
			err = orchestrator.CheckManifest(m)
			Expect(err).To(MatchError(HavePrefix(want)))
			Expect(errors.Is(err, resources.ErrInvalid)).To(BeTrue())
		},
		Entry("a bad mode inherited from defaults",
			"ccm:\n  resources:\n    - file:\n        - defaults: {owner: root, group: root, mode: '0888'}\n        - /a: {content: x, mode: '0644'}\n        - /b: {content: x}\n",
			`resources[0] file#/b: invalid resource: property mode: "0888" is not an octal number`),
		Entry("each name of a name list",
			"ccm:\n  resources:\n    - package:\n        name: [nginx, '{{ lookup(\"facts.x\" }}']\n",
			`resources[0] package#{{ lookup("facts.x" }}: invalid resource: property name: expression failed: "lookup(\"facts.x\"": unexpected token EOF`),
		Entry("a provider behind a * (the * itself is not known before templates)",
			"ccm:\n  resources:\n    - service:\n        - nginx: {provider: systemdd, '*': '{{ data.svc }}'}\n",
			`resources[0] service#nginx: invalid resource: unknown provider "systemdd" for service (known: systemd)`),
	)

	It("leaves to the agents what a * may set", func() {
		m, err := manifest.Parse([]byte("data: {p: {mode: '0644'}}\nccm:\n  resources:\n    - file:\n        - /etc/motd: {owner: root, group: root, '*': '{{ data.p }}'}\n"), manifest.ParseOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(orchestrator.CheckManifest(m)).To(Succeed(), "mode comes from data through *")
	})
})
