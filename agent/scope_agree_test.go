package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/trust/policy"
	"github.com/ccm-fleet/ccm/trust/scope"
)

// The agent's admission and ccm-orch policy check's offline judgement
// must reach the same verdict on every request: both are asked here.
var _ = Describe("Scopes agree with policy check", Ordered, func() {
	const canary = "agree-canary-51c0d2"
	var (
		f          *fixture
		dir        string
		pol        *policy.Policy
		keys       map[string]scopeKey
		facts      = map[string]any{"identity": "web-1", "os": "debian", "role": "web"}
		seq        int
		policyText = `
signers:
  - name: web
    public_key: KEY_web
    allow: [file, scaffold, archive]
    file:
      paths: [DIR/www/]
    deny:
      file:
        paths: [DIR/www/secret/]
  - name: reader
    public_key: KEY_reader
    allow: [file, exec]
    file:
      paths: [DIR/www/]
      read_paths: [DIR/etc/, DIR/www/]
    exec:
      commands: ["/usr/bin/true"]
    deny:
      file:
        read_paths: [DIR/etc/shadow]
  - name: audit
    public_key: KEY_audit
    allow: [file, package, service]
    noop_only: true
  - name: scanner
    public_key: KEY_scanner
    allow: [file, package, service]
    noop_only: true
    file:
      read_paths: [DIR/etc/]
  - name: ops
    public_key: KEY_ops
    allow: [file, package, service, exec, archive, scaffold]
  - name: accounts
    public_key: KEY_accounts
    allow: [user, group]
    user:
      names: [deploy, "app-*"]
    group:
      names: [adm, deployers]
    deny:
      user:
        names: [app-root]
  - name: people
    public_key: KEY_people
    allow: [user, group]
`
	)

	BeforeAll(func() {
		dir = GinkgoT().TempDir()
		for _, d := range []string{"www/secret", "www/tmpl", "etc", "root/tree"} {
			Expect(os.MkdirAll(filepath.Join(dir, d), 0o755)).To(Succeed())
		}
		Expect(os.Chmod(filepath.Join(dir, "root"), 0o700)).To(Succeed())
		for p, c := range map[string]string{"root/secret": canary, "root/tree/x.conf": canary, "etc/shadow": canary, "etc/motd": "hi\n", "www/page": "page\n", "www/tmpl/a.conf": "a\n"} {
			Expect(os.WriteFile(filepath.Join(dir, p), []byte(c+"\n"), 0o600)).To(Succeed())
		}
		Expect(os.Symlink(filepath.Join(dir, "root", "secret"), filepath.Join(dir, "www", "innocent"))).To(Succeed())
		keys = map[string]scopeKey{}
		r := []string{"DIR", dir}
		for _, n := range []string{"web", "reader", "audit", "scanner", "ops", "accounts", "people"} {
			keys[n] = newScopeKey()
			r = append(r, "KEY_"+n, keys[n].pub)
		}
		path := filepath.Join(dir, "policy.yaml")
		Expect(os.WriteFile(path, []byte(strings.NewReplacer(r...).Replace(policyText)), 0o644)).To(Succeed())
		var err error
		pol, err = policy.LoadPolicy(path)
		Expect(err).ToNot(HaveOccurred())
		f = startAgentAs(agent.Config{Identity: "web-1", Policy: path, StateDir: filepath.Join(dir, "state")}, map[string]any{"os": "debian", "role": "web"})
	})

	in := func(s string) string { return strings.ReplaceAll(s, "DIR", dir) }
	fileFrom := func(name, source string) map[string]any {
		return map[string]any{"name": name, "source": source, "owner": "root", "group": "root", "mode": "0644"}
	}
	content := func(name string) map[string]any {
		return map[string]any{"name": name, "content": "new\n", "owner": "root", "group": "root", "mode": "0644"}
	}

	DescribeTable("the agent and the offline check reach the same verdict",
		func(signer, typ string, props map[string]any, noop, allowed bool) {
			p := map[string]any{}
			for k, v := range props {
				if s, ok := v.(string); ok {
					v = in(s)
				}
				p[k] = v
			}
			seq++
			req := ensureRequest(fmt.Sprintf("agree-%03d", seq), time.Minute, typ, p)
			req.Noop = noop
			body, err := json.Marshal(req)
			Expect(err).ToNot(HaveOccurred())
			rep, err := pol.CheckOffline(context.Background(), policy.OfflineCheck{Signer: signer, Facts: facts, Request: body, Resolver: scope.HostResolver()})
			Expect(err).ToNot(HaveOccurred())

			reply := f.sendSigned("web-1", keys[signer], req)
			raw, err := json.Marshal(reply)
			Expect(err).ToNot(HaveOccurred())
			agentAllowed := reply.Error == nil || reply.Error.Code != protocol.CodeForbidden
			Expect(agentAllowed).To(Equal(rep.Allowed()), "agent: %s\ncheck: %v", raw, rep.Decisions)
			Expect(agentAllowed).To(Equal(allowed), "agent: %s", raw)
			if !allowed {
				Expect(string(raw)).ToNot(ContainSubstring(canary))
			}
		},
		Entry("file source inside", "web", "file", fileFrom("DIR/www/copy", "DIR/www/page"), false, true),
		Entry("file source outside (finding 1)", "web", "file", fileFrom("DIR/www/f1", "DIR/root/secret"), false, false),
		Entry("file source outside, noop", "web", "file", fileFrom("DIR/www/f2", "DIR/root/secret"), true, false),
		Entry("file source through a link", "web", "file", fileFrom("DIR/www/f3", "DIR/www/innocent"), false, false),
		Entry("file source with ..", "web", "file", fileFrom("DIR/www/f4", "DIR/www/../root/secret"), false, false),
		Entry("file written in a denied directory", "web", "file", content("DIR/www/secret/x"), false, false),
		Entry("scaffold source outside (finding 1)", "web", "scaffold", map[string]any{"name": "DIR/www/site", "source": "DIR/root/tree"}, false, false),
		Entry("scaffold source inside", "web", "scaffold", map[string]any{"name": "DIR/www/site2", "source": "DIR/www/tmpl"}, true, true),
		Entry("archive creates outside", "web", "archive", map[string]any{"name": "DIR/www/a.tar.gz", "url": "https://repo.example.net/a.tar.gz", "extract_parent": "DIR/www/x", "creates": "DIR/root/secret", "owner": "root", "group": "root"}, true, false),
		Entry("read_paths allow a source", "reader", "file", fileFrom("DIR/www/f5", "DIR/etc/motd"), false, true),
		Entry("deny.file.read_paths", "reader", "file", fileFrom("DIR/www/f6", "DIR/etc/shadow"), false, false),
		Entry("read_paths: source outside", "reader", "file", fileFrom("DIR/www/f7", "DIR/root/secret"), true, false),
		Entry("exec creates outside read_paths", "reader", "exec", map[string]any{"name": "/usr/bin/true", "creates": "DIR/root/secret"}, true, false),
		Entry("noop_only without read paths (finding 2)", "audit", "file", fileFrom("DIR/www/f8", "DIR/root/secret"), true, false),
		Entry("noop_only without read paths: content diff", "audit", "file", content("DIR/etc/shadow"), true, false),
		Entry("noop_only without read paths: a package", "audit", "package", map[string]any{"name": "no-such-package-xyz"}, true, true),
		Entry("noop_only sending a real run", "audit", "package", map[string]any{"name": "no-such-package-xyz"}, false, false),
		Entry("noop_only with read_paths", "scanner", "file", content("DIR/etc/motd"), true, true),
		Entry("noop_only with read_paths, source outside", "scanner", "file", fileFrom("DIR/etc/motd", "DIR/root/secret"), true, false),
		Entry("unscoped signer reads anything", "ops", "file", fileFrom("DIR/www/f9", "DIR/etc/motd"), true, true),
		// Account entries are all noops: an allowed one reads the account
		// databases and changes nothing on this machine.
		Entry("a user and a group user.names and group.names list", "accounts", "user", map[string]any{"name": "deploy", "groups": []any{"adm"}}, true, true),
		Entry("a user user.names does not list", "accounts", "user", map[string]any{"name": "mallory"}, true, false),
		Entry("a user deny.user.names lists", "accounts", "user", map[string]any{"name": "app-root"}, true, false),
		Entry("adding a user to a group group.names does not list", "accounts", "user", map[string]any{"name": "deploy", "groups": []any{"adm", "sudo"}}, true, false),
		Entry("a primary group group.names does not list", "accounts", "user", map[string]any{"name": "deploy", "group": "root"}, true, false),
		Entry("a uid 0 account", "accounts", "user", map[string]any{"name": "deploy", "uid": 0}, true, false),
		Entry("a uid 0 account, unscoped signer", "people", "user", map[string]any{"name": "deploy", "uid": 0}, true, false),
		Entry("another uid, unscoped signer", "people", "user", map[string]any{"name": "deploy", "uid": 2001}, true, true),
		Entry("a group and members the scopes list", "accounts", "group", map[string]any{"name": "deployers", "members": []any{"deploy"}}, true, true),
		Entry("a group group.names does not list", "accounts", "group", map[string]any{"name": "sudo", "members": []any{"deploy"}}, true, false),
		Entry("a member user.names does not list", "accounts", "group", map[string]any{"name": "deployers", "members": []any{"mallory"}}, true, false),
	)

	DescribeTable("on manifests, relative sources read the request's own files only",
		func(source string, allowed bool) {
			seq++
			req := ensureRequest(fmt.Sprintf("agree-m-%03d", seq), time.Minute, "file", map[string]any{"name": "x"})
			req.Ensure = nil
			doc := map[string]any{"ccm": map[string]any{"resources": []any{map[string]any{"file": []any{map[string]any{
				in("DIR/www/m") + fmt.Sprint(seq): map[string]any{"source": in(source), "owner": "root", "group": "root", "mode": "0644"},
			}}}}}}
			mb, err := json.Marshal(doc)
			Expect(err).ToNot(HaveOccurred())
			bundle, err := json.Marshal(map[string]any{"manifest": json.RawMessage(mb), "files": map[string][]byte{"files/a.conf": []byte("bundled\n")}})
			Expect(err).ToNot(HaveOccurred())
			req.Manifest = bundle
			body, err := json.Marshal(req)
			Expect(err).ToNot(HaveOccurred())
			rep, err := pol.CheckOffline(context.Background(), policy.OfflineCheck{Signer: "web", Facts: facts, Request: body, Resolver: scope.HostResolver()})
			Expect(err).ToNot(HaveOccurred())
			reply := f.sendSigned("web-1", keys["web"], req)
			raw, err := json.Marshal(reply)
			Expect(err).ToNot(HaveOccurred())
			agentAllowed := reply.Error == nil || reply.Error.Code != protocol.CodeForbidden
			Expect(agentAllowed).To(Equal(rep.Allowed()), "agent: %s\ncheck: %v", raw, rep.Decisions)
			Expect(agentAllowed).To(Equal(allowed), "agent: %s", raw)
			Expect(string(raw)).ToNot(ContainSubstring(canary))
		},
		Entry("a bundled file", "files/a.conf", true),
		Entry("a relative path climbing out", "../../../../../../../../../DIR/root/secret", false),
		Entry("an absolute path outside the scope", "DIR/root/secret", false),
	)
})
