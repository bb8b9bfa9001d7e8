package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"gopkg.in/yaml.v3"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("ccm-orch policy check", func() {
	var dir, policy, webFacts, dbFacts, site string
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		Expect(os.WriteFile(p, []byte(body), 0o644)).To(Succeed())
		return p
	}
	pub := func() string {
		kp, err := nkeys.CreateUser()
		Expect(err).ToNot(HaveOccurred())
		k, err := kp.PublicKey()
		Expect(err).ToNot(HaveOccurred())
		return k
	}
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		policy = write("policy.yaml", `signers:
  - name: ops
    public_key: `+pub()+`
    allow: [archive, exec, file, package, scaffold, service]
  - name: web
    public_key: `+pub()+`
    allow: [exec, file, service]
    hosts: [role=web]
    exec:
      commands: ["/usr/bin/systemctl restart *"]
    file:
      paths: [`+dir+`/nginx/]
    service:
      names: ["nginx*"]
    deny:
      file:
        paths: [`+dir+`/nginx/ssl]
  - name: auditors
    public_key: `+pub()+`
    allow: [file, service]
    noop_only: true
`)
		webFacts = write("web.yaml", "identity: web1\nrole: web\n")
		dbFacts = write("db.yaml", "identity: db1\nrole: db\n")
		site = write("site.yaml", `ccm:
  resources:
    - file:
        - `+dir+`/nginx/conf.d/{{ lookup('facts.identity') }}.conf:
            content: "server {}\n"
            owner: root
            group: root
            mode: "0644"
    - exec:
        - /usr/bin/systemctl restart nginx: {}
`)
	})
	check := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(append([]string{"policy", "check", policy}, args...), &out, &errOut)
		return code, out.String(), errOut.String()
	}

	It("prints each decision with its rule and exits 0 when everything is allowed", func() {
		code, out, errOut := check("--key", "web", "--manifest", site, "--facts", webFacts)
		Expect(code).To(Equal(0), out+errOut)
		Expect(strings.Split(strings.TrimSpace(out), "\n")).To(Equal([]string{
			`request: allowed host "web1" by hosts ["role=web"]`,
			`file#` + dir + `/nginx/conf.d/web1.conf: allowed type "file" by allow [exec, file, service]`,
			`file#` + dir + `/nginx/conf.d/web1.conf: allowed name "` + dir + `/nginx/conf.d/web1.conf" by file.paths[0] "` + dir + `/nginx/"`,
			// A diff shows the file's current content: a read, judged by
			// file.paths as no file.read_paths is set.
			`file#` + dir + `/nginx/conf.d/web1.conf: allowed name (read) "` + dir + `/nginx/conf.d/web1.conf" by file.paths[0] "` + dir + `/nginx/"`,
			`exec#/usr/bin/systemctl restart nginx: allowed type "exec" by allow [exec, file, service]`,
			`exec#/usr/bin/systemctl restart nginx: allowed command "/usr/bin/systemctl restart nginx" by exec.commands[0] "/usr/bin/systemctl restart *"`,
			`signer web: allowed: an agent with these facts would run it`,
		}))
	})

	It("exits 2 naming the rule of each refusal, and touches nothing", func() {
		code, out, _ := check("--key", "web", "--manifest", site, "--facts", dbFacts)
		Expect(code).To(Equal(2))
		Expect(out).To(ContainSubstring(`request: denied host "db1" by hosts ["role=web"]: this host's facts do not match it`))
		Expect(out).To(HaveSuffix("signer web: forbidden: an agent with these facts would refuse it\n"))
		Expect(filepath.Join(dir, "nginx")).ToNot(BeADirectory())

		req := write("req.yaml", "protocol: io.choria.ccm.v1.resource.ensure.request\ntype: file\nproperties:\n  name: "+dir+"/nginx/ssl/key.pem\n  content: x\n  owner: root\n  group: root\n  mode: \"0600\"\n")
		code, out, _ = check("--key", "web", "--request", req, "--facts", webFacts)
		Expect(code).To(Equal(2))
		Expect(out).To(ContainSubstring(`denied name "` + dir + `/nginx/ssl/key.pem" by deny.file.paths[0] "` + dir + `/nginx/ssl"`))
	})

	It("answers forbidden for an archive whose URL is out of scope, naming the URL and the rule (issue 39 finding 5)", func() {
		archive := func(url string) string {
			return write("archive.yaml", "protocol: io.choria.ccm.v1.resource.ensure.request\ntype: archive\nproperties:\n  name: "+dir+"/www/app.tar.gz\n  url: "+url+"\n  owner: root\n  group: root\n")
		}
		// Without net.urls, a loopback or metadata host is refused.
		code, out, _ := check("--key", "ops", "--request", archive("http://127.0.0.1:8080/releases/app.tar.gz"), "--facts", webFacts)
		Expect(code).To(Equal(2), out)
		Expect(out).To(ContainSubstring(`archive#` + dir + `/www/app.tar.gz: denied url "http://127.0.0.1:8080/releases/app.tar.gz" by net.urls (not set): 127.0.0.1 is a loopback address: only a net.urls prefix naming it allows it`))
		code, out, _ = check("--key", "ops", "--request", archive("http://169.254.169.254/latest/app.tar.gz"), "--facts", webFacts)
		Expect(code).To(Equal(2), out)
		Expect(out).To(ContainSubstring("a cloud metadata address"))
		code, out, _ = check("--key", "ops", "--request", archive("https://repo.example.com/releases/app.tar.gz"), "--facts", webFacts)
		Expect(code).To(Equal(0), out)
		Expect(out).To(ContainSubstring(`allowed url "https://repo.example.com/releases/app.tar.gz" by net.urls (not restricted)`))

		// With net.urls, only what a prefix holds.
		policy = write("policy-net.yaml", `signers:
  - name: fetch
    public_key: `+pub()+`
    allow: [archive]
    net:
      urls: ["http://127.0.0.1:8080/releases/"]
    deny:
      net:
        urls: ["http://127.0.0.1:8080/releases/old/"]
`)
		for url, want := range map[string]string{
			"http://127.0.0.1:8080/releases/app.tar.gz":      `allowed url "http://127.0.0.1:8080/releases/app.tar.gz" by net.urls[0] "http://127.0.0.1:8080/releases/"`,
			"http://127.0.0.1:8080/releases-evil/app.tar.gz": `denied url "http://127.0.0.1:8080/releases-evil/app.tar.gz" by net.urls (no prefix holds it: default deny)`,
			"http://127.0.0.1:8080/releases/old/app.tar.gz":  `denied url "http://127.0.0.1:8080/releases/old/app.tar.gz" by deny.net.urls[0] "http://127.0.0.1:8080/releases/old/"`,
		} {
			code, out, _ = check("--key", "fetch", "--request", archive(url), "--facts", webFacts)
			Expect(out).To(ContainSubstring(want))
			Expect(code).To(Equal(map[bool]int{true: 0, false: 2}[strings.HasPrefix(want, "allowed")]), out)
		}
	})

	It("judges noop_only with --noop and a fleet request's own noop", func() {
		req := write("svc.json", `{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"service","properties":{"name":"nginx","ensure":"running"}}`)
		code, out, _ := check("--key", "auditors", "--request", req, "--facts", webFacts)
		Expect(code).To(Equal(2))
		Expect(out).To(ContainSubstring(`request: denied noop "false" by noop_only: true: this signer may only send noop requests`))
		code, _, _ = check("--key", "auditors", "--request", req, "--facts", webFacts, "--noop")
		Expect(code).To(Equal(0))
		fleet := write("fleet.json", `{"protocol":"io.choria.ccm.v1.fleet.request","id":"r1","created":"2026-01-02T03:04:05Z","noop":true,"ensure":{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"service","properties":{"name":"nginx"}}}`)
		code, out, _ = check("--key", "auditors", "--request", fleet, "--facts", webFacts, "--json")
		Expect(code).To(Equal(0))
		var doc map[string]any
		Expect(json.Unmarshal([]byte(out), &doc)).To(Succeed())
		Expect(doc["allowed"]).To(BeTrue())
		Expect(doc["decisions"]).To(ContainElement(HaveKeyWithValue("rule", "noop_only: true")))

		// --yaml prints the same document.
		code, yout, _ := check("--key", "auditors", "--request", fleet, "--facts", webFacts, "--yaml")
		Expect(code).To(Equal(0))
		var ydoc map[string]any
		Expect(yaml.Unmarshal([]byte(yout), &ydoc)).To(Succeed())
		jb, err := json.Marshal(ydoc)
		Expect(err).ToNot(HaveOccurred())
		Expect(jb).To(MatchJSON(out))
		code, _, errOut := check("--key", "auditors", "--request", fleet, "--facts", webFacts, "--yaml", "--json")
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("--json and --yaml cannot be used together"))
	})

	It("judges a fleet request carrying a manifest bundle, its files included", func() {
		Expect(os.MkdirAll(filepath.Join(dir, "files"), 0o755)).To(Succeed())
		write("files/site.conf", "server {}\n")
		m := write("bundled.yaml", `ccm:
  resources:
    - file:
        - `+dir+`/nginx/site.conf:
            source: files/site.conf
            owner: root
            group: root
            mode: "0644"
        - /etc/passwd:
            source: files/site.conf
            owner: root
            group: root
            mode: "0644"
`)
		loaded, err := manifest.Load(m)
		Expect(err).ToNot(HaveOccurred())
		bundle, err := manifest.NewBundle(loaded)
		Expect(err).ToNot(HaveOccurred())
		req := protocol.NewFleetRequest("r1", time.Now(), time.Minute)
		req.Manifest, err = json.Marshal(bundle)
		Expect(err).ToNot(HaveOccurred())
		b, err := json.Marshal(req)
		Expect(err).ToNot(HaveOccurred())
		code, out, errOut := check("--key", "web", "--request", write("fleet-manifest.json", string(b)), "--facts", webFacts)
		Expect(code).To(Equal(2), out+errOut)
		Expect(out).To(ContainSubstring(`file#` + dir + `/nginx/site.conf: allowed name`))
		Expect(out).To(ContainSubstring(`file#/etc/passwd: denied name "/etc/passwd" by file.paths (no prefix holds /etc/passwd: default deny)`))
		Expect(filepath.Join(dir, "nginx", "site.conf")).ToNot(BeAnExistingFile())
	})

	It("reads the request from stdin with --request -", func() {
		r, w, err := os.Pipe()
		Expect(err).ToNot(HaveOccurred())
		_, err = w.WriteString(`{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"exec","properties":{"name":"/usr/bin/env sh -c id"}}`)
		Expect(err).ToNot(HaveOccurred())
		Expect(w.Close()).To(Succeed())
		saved := os.Stdin
		os.Stdin = r
		DeferCleanup(func() { os.Stdin = saved; _ = r.Close() })
		code, out, errOut := check("--key", "web", "--request", "-", "--facts", webFacts)
		Expect(code).To(Equal(2), out+errOut)
		Expect(out).To(ContainSubstring(`denied command "/usr/bin/env sh -c id" by exec.commands (no pattern matches: default deny)`))
	})

	It("exits 4 when a fleet request's filter leaves the host out", func() {
		fleet := write("fleet.json", `{"protocol":"io.choria.ccm.v1.fleet.request","id":"r1","created":"2026-01-02T03:04:05Z","filter":{"where":[{"key":"role","op":"=","value":"db"}]},"ensure":{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"service","properties":{"name":"nginx"}}}`)
		code, out, _ := check("--key", "web", "--request", fleet, "--facts", webFacts)
		Expect(code).To(Equal(4))
		Expect(out).To(ContainSubstring("not targeted"))
	})

	DescribeTable("exits 1 naming the problem",
		func(args func() []string, want string) {
			code, out, errOut := check(args()...)
			Expect(code).To(Equal(1), out)
			Expect(errOut).To(ContainSubstring(want))
		},
		Entry("unknown signer", func() []string { return []string{"--key", "nobody", "--manifest", site, "--facts", webFacts} }, `no signer "nobody" in the policy (signers: ops, web, auditors)`),
		Entry("neither request nor manifest", func() []string { return []string{"--key", "web", "--facts", webFacts} }, "give one of --request FILE or --manifest FILE"),
		Entry("both", func() []string {
			return []string{"--key", "web", "--facts", webFacts, "--manifest", site, "--request", site}
		}, "give one of"),
		Entry("a request of another protocol", func() []string {
			return []string{"--key", "web", "--facts", webFacts, "--request", write("bad.json", `{"protocol":"x"}`)}
		}, `field "protocol" must be`),
		Entry("a property the type does not have", func() []string {
			return []string{"--key", "web", "--facts", webFacts, "--request", write("bad.json", `{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"service","properties":{"name":"nginx","Ensure":"running"}}`)}
		}, `unknown field "Ensure"`),
	)

	It("exits 1 on a policy with an unreachable rule, naming it", func() {
		policy = write("bad-policy.yaml", "signers:\n  - name: web\n    public_key: "+pub()+"\n    allow: [file]\n    exec:\n      commands: [/bin/true]\n")
		code, _, errOut := check("--key", "web", "--manifest", site, "--facts", webFacts)
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("signers[0] web: exec: the signer is not allowed exec, so the rule can never apply"))
	})

	It("shows the split of dist/policy.yaml: ops everything, the web team nginx on web hosts, auditors noop only", func() {
		data, err := os.ReadFile("../../dist/policy.yaml")
		Expect(err).ToNot(HaveOccurred())
		policy = write("dist-policy.yaml", string(data)) // its keys are valid, their seeds thrown away
		ensure := func(typ, props string) string {
			return write(typ+"-req.json", `{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"`+typ+`","properties":`+props+`}`)
		}
		reload := ensure("exec", `{"name":"/usr/bin/systemctl reload nginx"}`)
		key := ensure("file", `{"name":"/etc/nginx/ssl/site.key","content":"x","owner":"root","group":"root","mode":"0600"}`)
		sshd := ensure("service", `{"name":"ssh","ensure":"stopped"}`)
		for _, c := range []struct {
			key, req, facts string
			noop            bool
			code            int
			want            string
		}{
			{"web", reload, webFacts, false, 0, `by exec.commands[2] "/usr/bin/systemctl reload nginx"`},
			{"web", reload, dbFacts, false, 2, `by hosts ["role=web"]`},
			{"web", key, webFacts, false, 2, `by deny.file.paths[0] "/etc/nginx/ssl/"`},
			{"web", sshd, webFacts, false, 2, "by service.names (no entry matches: default deny)"},
			{"ops", sshd, dbFacts, false, 0, "allowed type \"service\""},
			{"audit", sshd, webFacts, false, 2, "by noop_only: true"},
			{"audit", sshd, webFacts, true, 0, "allowed noop \"true\""},
		} {
			args := []string{"--key", c.key, "--request", c.req, "--facts", c.facts}
			if c.noop {
				args = append(args, "--noop")
			}
			code, out, errOut := check(args...)
			Expect(code).To(Equal(c.code), "%v: %s%s", args, out, errOut)
			Expect(out).To(ContainSubstring(c.want), "%v", args)
		}
	})
})

var _ = Describe("ccm-orch policy check of goss health checks", func() {
	It("judges each object a goss rule touches: a command needs exec and shell: true, a service its names", func() {
		dir := GinkgoT().TempDir()
		write := func(name, body string) string {
			p := filepath.Join(dir, name)
			Expect(os.WriteFile(p, []byte(body), 0o644)).To(Succeed())
			return p
		}
		kp, err := nkeys.CreateUser()
		Expect(err).ToNot(HaveOccurred())
		key, err := kp.PublicKey()
		Expect(err).ToNot(HaveOccurred())
		policy := write("policy.yaml", `signers:
  - name: web
    public_key: `+key+`
    allow: [file, exec, service]
    exec:
      commands: ['/bin/sh -c "systemctl is-active nginx"']
    file:
      paths: [`+dir+`/www/]
    service:
      names: [nginx]
`)
		facts := write("facts.yaml", "identity: web1\n")
		site := write("site.yaml", `ccm:
  resources:
    - file:
        - `+dir+`/www/index.html:
            content: "hi\n"
            owner: root
            group: root
            mode: "0644"
            health_checks:
              - goss_rules:
                  command:
                    "systemctl is-active nginx":
                      exit-status: 0
                  service:
                    sshd:
                      running: true
`)
		var out, errOut bytes.Buffer
		code := run([]string{"policy", "check", policy, "--key", "web", "--manifest", site, "--facts", facts}, &out, &errOut)
		Expect(code).To(Equal(int(protocol.ExitFailed)), out.String()+errOut.String())
		Expect(out.String()).To(ContainSubstring(`denied health_checks[0].goss_rules.command "systemctl is-active nginx" by shell: false: goss runs command rules with sh -c`))

		Expect(os.WriteFile(policy, []byte(strings.Replace(mustRead(policy), "    allow: [file, exec, service]\n", "    allow: [file, exec, service]\n    shell: true\n", 1)), 0o644)).To(Succeed())
		out.Reset()
		errOut.Reset()
		code = run([]string{"policy", "check", policy, "--key", "web", "--manifest", site, "--facts", facts}, &out, &errOut)
		Expect(code).To(Equal(int(protocol.ExitFailed)), out.String()+errOut.String())
		Expect(out.String()).To(ContainSubstring(`allowed health_checks[0].goss_rules.command "sh -c 'systemctl is-active nginx'`))
		Expect(out.String()).To(ContainSubstring(`by exec.commands[0]`))
		Expect(out.String()).To(ContainSubstring(`denied name "sshd" by service.names (no entry matches: default deny)`))
	})
})

func mustRead(path string) string {
	b, err := os.ReadFile(path)
	Expect(err).ToNot(HaveOccurred())
	return string(b)
}
