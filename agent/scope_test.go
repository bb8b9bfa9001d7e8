package agent_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/internal/proctest"
	"github.com/ccm-fleet/ccm/protocol"
)

// scopeKey is a signer of the scope tests.
type scopeKey struct {
	kp  nkeys.KeyPair
	pub string
}

func newScopeKey() scopeKey {
	kp, err := nkeys.CreateUser()
	Expect(err).ToNot(HaveOccurred())
	pub, err := kp.PublicKey()
	Expect(err).ToNot(HaveOccurred())
	return scopeKey{kp: kp, pub: pub}
}

// sendSigned signs req with k and sends it to the agent's node subject.
func (f *fixture) sendSigned(identity string, k scopeKey, req *protocol.FleetRequest) *protocol.FleetReply {
	inbox := f.nc.NewInbox()
	req.Sender, req.Reply = k.pub, inbox
	body, err := json.Marshal(req)
	Expect(err).ToNot(HaveOccurred())
	signer, sig, err := protocol.Sign(body, k.kp)
	Expect(err).ToNot(HaveOccurred())
	sub, err := f.nc.SubscribeSync(inbox)
	Expect(err).ToNot(HaveOccurred())
	defer func() { _ = sub.Unsubscribe() }()
	h := nats.Header{}
	h.Set(protocol.HeaderSigner, signer)
	h.Set(protocol.HeaderSignature, sig)
	Expect(f.nc.PublishMsg(&nats.Msg{Subject: protocol.RequestNodeSubject(identity), Reply: inbox, Header: h, Data: body})).To(Succeed())
	m, err := sub.NextMsg(20 * time.Second)
	Expect(err).ToNot(HaveOccurred())
	reply, err := protocol.DecodeFleetReply(m.Data, protocol.Limits{})
	Expect(err).ToNot(HaveOccurred())
	return reply
}

// auditOf returns the audit lines of request id in the state directory.
func auditOf(stateDir, id string) []agent.AuditRecord {
	data, err := os.ReadFile(filepath.Join(stateDir, agent.AuditFileName))
	Expect(err).ToNot(HaveOccurred())
	var out []agent.AuditRecord
	for _, line := range proctest.CompleteLines(data) {
		var r agent.AuditRecord
		Expect(json.Unmarshal([]byte(line), &r)).To(Succeed(), line)
		if r.RequestID == id {
			out = append(out, r)
		}
	}
	return out
}

var _ = Describe("Signer scopes on a running agent", Ordered, func() {
	var (
		f                        *fixture
		dir, state               string
		runner, files, db, names scopeKey
		applier                  scopeKey
		seq                      int
	)

	BeforeAll(func() {
		dir = GinkgoT().TempDir()
		state = filepath.Join(dir, "state")
		runner, files, db, names = newScopeKey(), newScopeKey(), newScopeKey(), newScopeKey()
		applier = newScopeKey()
		for _, d := range []string{"www/site", "www/secret", "outside", "wwwx", "bin"} {
			Expect(os.MkdirAll(filepath.Join(dir, d), 0o755)).To(Succeed())
		}
		// A look-alike "busybox" that runs sh when asked to, as the real one does.
		Expect(os.WriteFile(filepath.Join(dir, "busybox"), []byte("#!/bin/sh\nif [ \"$1\" = sh ]; then shift; exec /bin/sh \"$@\"; fi\nexit 1\n"), 0o755)).To(Succeed())
		Expect(os.Symlink("/bin/sh", filepath.Join(dir, "bin", "touch"))).To(Succeed())
		Expect(os.Symlink(filepath.Join(dir, "outside"), filepath.Join(dir, "www", "link"))).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "outside", "passwd"), []byte("root:x:0:0\n"), 0o644)).To(Succeed())
		Expect(os.Symlink(filepath.Join(dir, "outside", "passwd"), filepath.Join(dir, "www", "passwd"))).To(Succeed())
		policy := filepath.Join(dir, "policy.yaml")
		Expect(os.WriteFile(policy, []byte(strings.NewReplacer("DIR", dir, "RUNNER", runner.pub, "FILES", files.pub, "DBKEY", db.pub, "NAMES", names.pub, "APPLIER", applier.pub).Replace(`
signers:
  - name: runner
    public_key: RUNNER
    allow: [exec]
    exec:
      commands:
        - /usr/bin/touch *
        - /usr/bin/env **
        - /usr/bin/bash **
        - /usr/bin/python3 **
        - DIR/busybox **
      environment: ["LANG=*"]
      cwd: [DIR]
      path: ["DIR/bin:/usr/bin"]
    deny:
      exec:
        commands: [/usr/bin/touch DIR/denied-canary]
  - name: files
    public_key: FILES
    allow: [file, archive, scaffold]
    file:
      paths: [DIR/www/]
    deny:
      file:
        paths: [DIR/www/secret]
  - name: dbteam
    public_key: DBKEY
    allow: [exec]
    hosts: [role=db]
  - name: names
    public_key: NAMES
    allow: [package, service]
    package:
      names: ["nginx*"]
    service:
      names: ["nginx*"]
    deny:
      service:
        names: [nginx-debug]
  - name: applier
    public_key: APPLIER
    allow: [file, apply]
    file:
      paths: [DIR/www/]
`)), 0o644)).To(Succeed())
		f = startAgentAs(agent.Config{Identity: "web-1", Policy: policy, StateDir: state}, map[string]any{"os": "debian", "role": "web"})
	})

	request := func(typ string, props map[string]any, noop bool) *protocol.FleetRequest {
		seq++
		req := ensureRequest(fmt.Sprintf("scope-%03d", seq), time.Minute, typ, props)
		req.Noop = noop
		return req
	}
	in := func(s string) string { return strings.ReplaceAll(s, "DIR", dir) }

	// refused sends props as key and expects forbidden naming rule, and
	// canary (below dir) absent.
	refused := func(key func() scopeKey, typ string, props map[string]any, canary, rule string) {
		p := map[string]any{}
		for k, v := range props {
			if s, ok := v.(string); ok {
				v = in(s)
			}
			p[k] = v
		}
		req := request(typ, p, false)
		r := f.sendSigned("web-1", key(), req)
		Expect(r.Error).ToNot(BeNil(), "events: %v", r.Events)
		Expect(r.Error.Code).To(Equal(protocol.CodeForbidden), r.Error.Message)
		Expect(r.Error.Message).To(ContainSubstring(in(rule)))
		Expect(in(canary)).ToNot(BeAnExistingFile())
		lines := auditOf(state, req.ID)
		Expect(lines).ToNot(BeEmpty())
		last := lines[len(lines)-1]
		Expect(last.Rule).ToNot(BeEmpty(), "the audit line names the rule")
		Expect(r.Error.Message).To(ContainSubstring(last.Rule))
		Expect(last.Value).ToNot(BeEmpty(), "the audit line names the value")
		Expect(r.Error.Message).To(Or(ContainSubstring(last.Value), ContainSubstring(fmt.Sprintf("%.200q", last.Value))))
	}

	DescribeTable("exec.commands refuses, leaving the canary absent",
		func(props map[string]any, canary, rule string) {
			refused(func() scopeKey { return runner }, "exec", props, canary, rule)
		},
		Entry("a command no pattern matches", map[string]any{"name": "/usr/bin/mkdir DIR/canary-mkdir"}, "DIR/canary-mkdir", "default deny"),
		Entry("deny beats allow", map[string]any{"name": "/usr/bin/touch DIR/denied-canary"}, "DIR/denied-canary", `deny.exec.commands[0]`),
		Entry("sh -c", map[string]any{"name": "/bin/sh -c 'touch DIR/canary-sh'"}, "DIR/canary-sh", "default deny"),
		Entry("/usr/bin/../bin/sh", map[string]any{"name": "/usr/bin/../bin/sh -c 'touch DIR/canary-dots'"}, "DIR/canary-dots", "default deny"),
		Entry("env running a command (env **)", map[string]any{"name": "/usr/bin/env touch DIR/canary-env"}, "DIR/canary-env", "spells out every argument"),
		Entry("bash -c (bash **)", map[string]any{"name": "bash -c 'touch DIR/canary-bash'"}, "DIR/canary-bash", "spells out every argument"),
		Entry("python3 -c (python3 **)", map[string]any{"name": "/usr/bin/python3 -c \"open('DIR/canary-py', 'w')\""}, "DIR/canary-py", "an interpreter's own options"),
		Entry("busybox sh (busybox **)", map[string]any{"name": "DIR/busybox sh -c 'touch DIR/canary-busybox'"}, "DIR/canary-busybox", "spells out every argument"),
		Entry("a link to sh named touch", map[string]any{"name": "DIR/bin/touch -c 'touch DIR/canary-link'"}, "DIR/canary-link", "default deny"),
		Entry("a path that finds a link to sh named touch", map[string]any{"name": "touch -c 'touch DIR/canary-path'", "path": "DIR/bin:/usr/bin"}, "DIR/canary-path", "default deny"),
		Entry("the shell provider", map[string]any{"name": "/usr/bin/touch DIR/canary-shellprov", "provider": "shell"}, "DIR/canary-shellprov", "shell: false"),
		Entry("an onlyif guard", map[string]any{"name": "/usr/bin/touch DIR/canary-onlyif-cmd", "onlyif": "/bin/sh -c 'touch DIR/canary-onlyif'"}, "DIR/canary-onlyif", "default deny"),
		Entry("an unlisted environment", map[string]any{"name": "/usr/bin/touch DIR/canary-envvar", "environment": []any{"LD_PRELOAD=/nonexistent.so"}}, "DIR/canary-envvar", "exec.environment"),
		Entry("an unlisted cwd", map[string]any{"name": "/usr/bin/touch DIR/canary-cwd", "cwd": "/tmp"}, "DIR/canary-cwd", "exec.cwd"),
		Entry("an unlisted path", map[string]any{"name": "/usr/bin/touch DIR/canary-pathvar", "path": "/usr/bin"}, "DIR/canary-pathvar", "exec.path"),
		Entry("a templated command resolved at run time", map[string]any{"name": "{{ '/bin/sh' }} -c 'touch DIR/canary-tpl'"}, "DIR/canary-tpl", "default deny"),
		Entry("a health check's command", map[string]any{"name": "/usr/bin/touch DIR/canary-hc-cmd", "health_checks": []any{map[string]any{"command": "/bin/sh -c 'touch DIR/canary-hc'"}}}, "DIR/canary-hc", "health_checks[0]"),
	)

	It("runs what exec.commands allows", func() {
		for i, props := range []map[string]any{
			{"name": in("/usr/bin/touch DIR/ok-1")},
			{"name": in("touch DIR/ok-2")},
			{"name": in("/bin/touch DIR/ok-3"), "environment": []any{"LANG=C"}, "cwd": dir},
			{"name": in("/usr/bin/python3 DIR/mk.py DIR/ok-4")},
		} {
			if i == 3 {
				Expect(os.WriteFile(filepath.Join(dir, "mk.py"), []byte("import sys\nopen(sys.argv[1], 'w').close()\n"), 0o644)).To(Succeed())
			}
			r := f.sendSigned("web-1", runner, request("exec", props, false))
			Expect(r.Error).To(BeNil(), "%v", props)
			Expect(r.Events).To(HaveLen(1))
			Expect(r.Events[0].Failed).To(BeFalse(), "%v", r.Events[0].Errors)
			Expect(filepath.Join(dir, fmt.Sprintf("ok-%d", i+1))).To(BeAnExistingFile())
		}
	})

	fileProps := func(name string) map[string]any {
		return map[string]any{"name": name, "content": "pwned\n", "owner": "root", "group": "root", "mode": "0644"}
	}
	DescribeTable("file.paths refuses, leaving the canary absent",
		func(typ string, props map[string]any, canary, rule string) {
			refused(func() scopeKey { return files }, typ, props, canary, rule)
		},
		Entry("outside", "file", fileProps("DIR/outside/canary"), "DIR/outside/canary", "default deny"),
		Entry("a sibling sharing the prefix's letters", "file", fileProps("DIR/wwwx/canary"), "DIR/wwwx/canary", "default deny"),
		Entry("deny beats allow", "file", fileProps("DIR/www/secret/canary"), "DIR/www/secret/canary", "deny.file.paths[0]"),
		Entry("through a linked directory", "file", fileProps("DIR/www/link/canary"), "DIR/outside/canary", "default deny"),
		Entry("archive extracted outside", "archive", map[string]any{"name": "DIR/www/a.tar.gz", "url": "https://repo.example.net/a.tar.gz", "extract_parent": "DIR/outside", "creates": "DIR/outside/x", "owner": "root", "group": "root"}, "DIR/www/a.tar.gz", "default deny"),
		Entry("scaffold target outside", "scaffold", map[string]any{"name": "DIR/outside/site", "source": "DIR/www/site"}, "DIR/outside/site", "default deny"),
		Entry("scaffold post commands need exec", "scaffold", map[string]any{"name": "DIR/www/scaffolded", "source": "DIR/www/site", "post": []any{map[string]any{"*": "/usr/bin/touch"}}}, "DIR/www/scaffolded", "need exec in allow"),
	)

	It("refuses a traversal (the path is not even clean) and a link pointing outside, changing nothing", func() {
		r := f.sendSigned("web-1", files, request("file", fileProps(dir+"/www/../outside/canary"), false))
		Expect(r.Error).ToNot(BeNil())
		Expect(r.Error.Code).To(Equal(protocol.CodeBadRequest))
		Expect(filepath.Join(dir, "outside", "canary")).ToNot(BeAnExistingFile())

		r = f.sendSigned("web-1", files, request("file", fileProps(dir+"/www/passwd"), false))
		Expect(r.Error).ToNot(BeNil())
		Expect(r.Error.Code).To(Equal(protocol.CodeForbidden))
		Expect(os.ReadFile(filepath.Join(dir, "outside", "passwd"))).To(Equal([]byte("root:x:0:0\n")))
		Expect(os.Readlink(filepath.Join(dir, "www", "passwd"))).To(Equal(filepath.Join(dir, "outside", "passwd")))
	})

	It("writes what file.paths allows", func() {
		r := f.sendSigned("web-1", files, request("file", fileProps(dir+"/www/site/index.html"), false))
		Expect(r.Error).To(BeNil())
		Expect(r.Events[0].Failed).To(BeFalse(), "%v", r.Events[0].Errors)
		Expect(os.ReadFile(filepath.Join(dir, "www", "site", "index.html"))).To(Equal([]byte("pwned\n")))
	})

	It("refuses a manifest whole when one resource is out of scope, applying none", func() {
		req := request("file", fileProps(dir+"/www/site/first"), false)
		req.Ensure = nil
		m := protocol.FleetRequest{}
		_ = m
		body := fmt.Sprintf(`{"manifest":{"ccm":{"resources":[{"file":[{"%s/www/site/first":{"content":"x","owner":"root","group":"root","mode":"0644"}},{"%s/outside/second":{"content":"x","owner":"root","group":"root","mode":"0644"}}]}]}}}`, dir, dir)
		req.Manifest = json.RawMessage(body)
		r := f.sendSigned("web-1", files, req)
		Expect(r.Error).ToNot(BeNil())
		Expect(r.Error.Code).To(Equal(protocol.CodeForbidden))
		Expect(r.Error.Message).To(ContainSubstring("file#" + dir + "/outside/second"))
		Expect(filepath.Join(dir, "www", "site", "first")).ToNot(BeAnExistingFile())
	})

	// Issue 39, finding 7: an apply child was judged only when it ran, so
	// the parent's resources before it ran and the request answered
	// failed. The children are judged with the parent, before anything.
	It("refuses a manifest whole when a resource of an apply child is out of scope, applying nothing of the parent", func() {
		req := request("file", fileProps(dir+"/www/site/parent-first"), false)
		req.Ensure = nil
		child := fmt.Sprintf("ccm:\n  resources:\n    - file:\n        - %s/outside/child-canary: {content: x, owner: root, group: root, mode: \"0644\"}\n", dir)
		body, err := json.Marshal(map[string]any{
			"manifest": map[string]any{"ccm": map[string]any{"resources": []any{
				map[string]any{"file": []any{map[string]any{dir + "/www/site/parent-first": map[string]any{"content": "x", "owner": "root", "group": "root", "mode": "0644"}}}},
				map[string]any{"apply": []any{map[string]any{"child/manifest.yaml": map[string]any{}}}},
			}}},
			"files": map[string][]byte{"child/manifest.yaml": []byte(child)},
		})
		Expect(err).ToNot(HaveOccurred())
		req.Manifest = body
		r := f.sendSigned("web-1", applier, req)
		Expect(r.Error).ToNot(BeNil())
		Expect(r.Error.Code).To(Equal(protocol.CodeForbidden))
		Expect(r.Error.Message).To(ContainSubstring("file#" + dir + "/outside/child-canary"))
		Expect(r.Events).To(BeEmpty())
		Expect(filepath.Join(dir, "www", "site", "parent-first")).ToNot(BeAnExistingFile())
		Expect(filepath.Join(dir, "outside", "child-canary")).ToNot(BeAnExistingFile())
	})

	It("refuses a signer scoped to other hosts at admission, naming the rule", func() {
		req := request("exec", map[string]any{"name": "/usr/bin/touch " + dir + "/canary-host"}, false)
		r := f.sendSigned("web-1", db, req)
		Expect(r.Error).ToNot(BeNil())
		Expect(r.Error.Code).To(Equal(protocol.CodeForbidden))
		Expect(r.Error.Message).To(Equal(`signer dbteam: denied host "web-1" by hosts ["role=db"]: this host's facts do not match it`))
		Expect(filepath.Join(dir, "canary-host")).ToNot(BeAnExistingFile())
		lines := auditOf(state, req.ID)
		Expect(lines).To(HaveLen(1))
		Expect(lines[0].Decision).To(Equal("forbidden"))
		Expect(lines[0].Rule).To(Equal(`hosts ["role=db"]`))
		Expect(lines[0].Value).To(Equal("web-1"))
	})

	DescribeTable("package.names and service.names",
		func(typ, name string, allowed bool, rule string) {
			r := f.sendSigned("web-1", names, request(typ, map[string]any{"name": name}, true))
			if allowed {
				if r.Error != nil {
					Expect(r.Error.Code).ToNot(Equal(protocol.CodeForbidden), r.Error.Message)
				}
				return
			}
			Expect(r.Error).ToNot(BeNil())
			Expect(r.Error.Code).To(Equal(protocol.CodeForbidden))
			Expect(r.Error.Message).To(ContainSubstring(rule))
		},
		Entry("package allowed by a glob", "package", "nginx-extras", true, ""),
		Entry("package no glob matches", "package", "openssh-server", false, "package.names (no entry matches: default deny)"),
		Entry("service allowed", "service", "nginx", true, ""),
		Entry("service denied beats allowed", "service", "nginx-debug", false, `deny.service.names[0] "nginx-debug"`),
		Entry("service no glob matches", "service", "sshd", false, "default deny"),
	)
})
