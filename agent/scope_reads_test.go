package agent_test

import (
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
)

var _ = Describe("Read scopes on a running agent", Ordered, func() {
	const canary = "read-scope-canary-7f3e9a"
	var (
		f                *fixture
		dir, state       string
		web, audit, ropt scopeKey
		seq              int
	)

	BeforeAll(func() {
		dir = GinkgoT().TempDir()
		state = filepath.Join(dir, "state")
		web, audit, ropt = newScopeKey(), newScopeKey(), newScopeKey()
		for _, d := range []string{"www", "root/tree", "etc"} {
			Expect(os.MkdirAll(filepath.Join(dir, d), 0o755)).To(Succeed())
		}
		Expect(os.Chmod(filepath.Join(dir, "root"), 0o700)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "root", "secret"), []byte(canary+"\n"), 0o600)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "root", "tree", "secret.conf"), []byte(canary+"\n"), 0o600)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "www", "page"), []byte("public\n"), 0o644)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "etc", "motd"), []byte("hello\n"), 0o644)).To(Succeed())
		Expect(os.Symlink(filepath.Join(dir, "root", "secret"), filepath.Join(dir, "www", "innocent"))).To(Succeed())
		policy := filepath.Join(dir, "policy.yaml")
		Expect(os.WriteFile(policy, []byte(strings.NewReplacer("DIR", dir, "WEB", web.pub, "AUDIT", audit.pub, "ROPT", ropt.pub).Replace(`
signers:
  - name: web
    public_key: WEB
    allow: [file, scaffold]
    file:
      paths: [DIR/www/]
  - name: audit
    public_key: AUDIT
    allow: [file, package, service]
    noop_only: true
  - name: reader
    public_key: ROPT
    allow: [file, package, service]
    noop_only: true
    file:
      read_paths: [DIR/etc/, DIR/www/]
    deny:
      file:
        read_paths: [DIR/etc/shadow]
`)), 0o644)).To(Succeed())
		f = startAgentAs(agent.Config{Identity: "web-1", Policy: policy, StateDir: state}, map[string]any{"os": "debian", "role": "web"})
	})

	request := func(typ string, props map[string]any, noop bool) *protocol.FleetRequest {
		seq++
		req := ensureRequest(fmt.Sprintf("reads-%03d", seq), time.Minute, typ, props)
		req.Noop = noop
		return req
	}
	in := func(s string) string { return strings.ReplaceAll(s, "DIR", dir) }
	fileFrom := func(name, source string) map[string]any {
		return map[string]any{"name": name, "source": source, "owner": "root", "group": "root", "mode": "0644"}
	}
	// refusedWithout sends props as key and expects forbidden naming rule,
	// nothing at written, and the canary nowhere in the reply or the
	// audit lines.
	refusedWithout := func(key scopeKey, typ string, props map[string]any, noop bool, written, rule string) {
		p := map[string]any{}
		for k, v := range props {
			if s, ok := v.(string); ok {
				v = in(s)
			}
			p[k] = v
		}
		req := request(typ, p, noop)
		r := f.sendSigned("web-1", key, req)
		raw, err := json.Marshal(r)
		Expect(err).ToNot(HaveOccurred())
		Expect(string(raw)).ToNot(ContainSubstring(canary))
		Expect(r.Error).ToNot(BeNil(), "events: %s", raw)
		Expect(r.Error.Code).To(Equal(protocol.CodeForbidden), r.Error.Message)
		Expect(r.Error.Message).To(ContainSubstring(in(rule)))
		Expect(in(written)).ToNot(BeAnExistingFile())
		lines := auditOf(state, req.ID)
		Expect(lines).ToNot(BeEmpty())
		line, err := json.Marshal(lines)
		Expect(err).ToNot(HaveOccurred())
		Expect(string(line)).ToNot(ContainSubstring(canary))
	}

	DescribeTable("a scoped signer cannot read outside its scope",
		func(key func() scopeKey, typ string, props map[string]any, noop bool, written, rule string) {
			refusedWithout(key(), typ, props, noop, written, rule)
		},
		Entry("file source outside file.paths", func() scopeKey { return web }, "file", fileFrom("DIR/www/f", "DIR/root/secret"), false, "DIR/www/f", `source (read) "DIR/root/secret" by file.paths (no prefix holds DIR/root/secret: default deny)`),
		Entry("the same as a noop", func() scopeKey { return web }, "file", fileFrom("DIR/www/f", "DIR/root/secret"), true, "DIR/www/f", "file.paths (no prefix holds DIR/root/secret: default deny)"),
		Entry("file source through a link inside file.paths", func() scopeKey { return web }, "file", fileFrom("DIR/www/g", "DIR/www/innocent"), false, "DIR/www/g", "leads to DIR/root/secret"),
		Entry("scaffold source outside file.paths", func() scopeKey { return web }, "scaffold", map[string]any{"name": "DIR/www/site", "source": "DIR/root/tree"}, false, "DIR/www/site", "file.paths (no prefix holds DIR/root/tree: default deny)"),
		Entry("a noop_only signer without read paths", func() scopeKey { return audit }, "file", fileFrom("DIR/www/h", "DIR/root/secret"), true, "DIR/www/h", "file.read_paths (noop_only signer: reads must be listed)"),
		Entry("a noop_only signer reading outside read_paths", func() scopeKey { return ropt }, "file", fileFrom("DIR/etc/motd", "DIR/root/secret"), true, "DIR/etc/none", "file.read_paths (no prefix holds DIR/root/secret: default deny)"),
	)

	It("copies a source inside the scope", func() {
		r := f.sendSigned("web-1", web, request("file", fileFrom(in("DIR/www/copy"), in("DIR/www/page")), false))
		Expect(r.Error).To(BeNil())
		Expect(r.Events).To(HaveLen(1))
		Expect(r.Events[0].Failed).To(BeFalse(), "%v", r.Events[0].Errors)
		Expect(os.ReadFile(filepath.Join(dir, "www", "copy"))).To(Equal([]byte("public\n")))
	})

	It("lets a noop_only signer audit what read_paths list", func() {
		r := f.sendSigned("web-1", ropt, request("file", map[string]any{"name": in("DIR/etc/motd"), "content": "changed\n", "owner": "root", "group": "root", "mode": "0644"}, true))
		Expect(r.Error).To(BeNil())
		Expect(r.Events).To(HaveLen(1))
		Expect(r.Events[0].Noop).To(BeTrue())
		Expect(os.ReadFile(filepath.Join(dir, "etc", "motd"))).To(Equal([]byte("hello\n")))
	})
})
