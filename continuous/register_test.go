package continuous_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/continuous"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/registration"
)

// webManifest manages a file whose health check needs healthy to exist,
// registered as service (web) when stable.
func webManifest(target, healthy, service string) string {
	return fileManifest(target, "served\n", "/bin/sh -c 'test -f "+healthy+" || exit 2'") + fmt.Sprintf(`            register_when_stable:
              - cluster: production
                service: %s
                protocol: http
                address: "{{ lookup('facts.ip') }}"
                port: 80
                priority: 10
                ttl: 1m
                annotations:
                  host: "{{ lookup('facts.identity') }}"
`, service)
}

// lbManifest renders a load balancer's upstreams from registrations().
const lbManifest = `ccm:
  resources:
    - file:
        - %q:
            ensure: present
            owner: root
            group: root
            mode: "0644"
            content: |-
              {{ join(map(registrations('production', 'http', 'web', '*'), 'server ' + .Address + ':' + string(.Port)), "\n") }}
`

var _ = Describe("Registration", func() {
	var (
		js  jetstream.JetStream
		ctx = context.Background()
	)

	BeforeEach(func() {
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err = jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		_, err = registration.EnsureStream(ctx, js, registration.DefaultStream, 1, time.Minute)
		Expect(err).NotTo(HaveOccurred())
	})

	registrar := func(host string) continuous.Registrar {
		kp, _ := nkeys.CreateUser()
		s, err := protocol.NewKeySigner(kp)
		Expect(err).NotTo(HaveOccurred())
		return &continuous.StreamRegistrar{JS: js, Stream: registration.DefaultStream, Signer: s, Host: host}
	}

	query := func() []string {
		recs, _, err := registration.Query(ctx, js, registration.DefaultStream, &registration.Trust{JS: js, Stream: registration.DefaultStream}, "production", "http", "web", "*")
		Expect(err).NotTo(HaveOccurred())
		var out []string
		for _, r := range recs {
			out = append(out, fmt.Sprintf("%s:%d %s", r.Address, r.Port, r.Annotations["host"]))
		}
		return out
	}

	It("registers three stable web hosts, a load balancer renders exactly those, and one whose health check goes CRITICAL is withdrawn and dropped", func() {
		dir := GinkgoT().TempDir()
		for i := 1; i <= 3; i++ {
			h := &harness{dir: filepath.Join(dir, fmt.Sprint(i)), registrar: registrar(fmt.Sprintf("web%d", i)),
				facts: map[string]any{"identity": fmt.Sprintf("web%d", i), "ip": fmt.Sprintf("10.0.0.%d", i)}}
			Expect(os.MkdirAll(h.dir, 0o700)).To(Succeed())
			healthy := filepath.Join(h.dir, "healthy")
			Expect(os.WriteFile(healthy, nil, 0o600)).To(Succeed())
			m := filepath.Join(h.dir, "web.yaml")
			Expect(os.WriteFile(m, []byte(webManifest(filepath.Join(h.dir, "site"), healthy, "web")), 0o600)).To(Succeed())
			h.start(fmt.Sprintf("interval: 1h\nhealth_check_interval: 1s\nmanifests: [%s]\nregistration: jetstream\n", m), nil, 0)
		}
		Eventually(query).WithTimeout(30 * time.Second).Should(Equal([]string{"10.0.0.1:80 web1", "10.0.0.2:80 web2", "10.0.0.3:80 web3"}))

		// A load balancer renders its upstreams from registrations().
		upstreams := filepath.Join(dir, "upstreams.conf")
		lb := func() {
			h := &harness{dir: GinkgoT().TempDir(), js: js, facts: map[string]any{"identity": "lb1"}}
			m := filepath.Join(h.dir, "lb.yaml")
			Expect(os.WriteFile(m, []byte(fmt.Sprintf(lbManifest, upstreams)), 0o600)).To(Succeed())
			h.start(fmt.Sprintf("interval: 1h\nmanifests: [%s]\n", m), nil, 0)
		}
		lb()
		Eventually(func() (string, error) { b, err := os.ReadFile(upstreams); return string(b), err }).WithTimeout(30 * time.Second).Should(Equal("server 10.0.0.1:80\nserver 10.0.0.2:80\nserver 10.0.0.3:80"))

		Expect(os.Remove(filepath.Join(dir, "2", "healthy"))).To(Succeed())
		Eventually(query).WithTimeout(30 * time.Second).Should(Equal([]string{"10.0.0.1:80 web1", "10.0.0.3:80 web3"}))
		// The load balancer's next run (here a fresh start) drops it.
		lb()
		Eventually(func() (string, error) { b, err := os.ReadFile(upstreams); return string(b), err }).WithTimeout(30 * time.Second).Should(Equal("server 10.0.0.1:80\nserver 10.0.0.3:80"))
	})

	// webHosts starts two web hosts registering web in production and
	// waits for both entries.
	webHosts := func() {
		GinkgoHelper()
		for i := 1; i <= 2; i++ {
			h := &harness{dir: GinkgoT().TempDir(), js: js, registrar: registrar(fmt.Sprintf("web%d", i)), facts: map[string]any{"identity": fmt.Sprintf("web%d", i), "ip": fmt.Sprintf("10.0.0.%d", i)}}
			healthy := filepath.Join(h.dir, "healthy")
			Expect(os.WriteFile(healthy, nil, 0o600)).To(Succeed())
			m := filepath.Join(h.dir, "web.yaml")
			Expect(os.WriteFile(m, []byte(webManifest(filepath.Join(h.dir, "site"), healthy, "web")), 0o600)).To(Succeed())
			h.start(fmt.Sprintf("interval: 1h\nmanifests: [%s]\nregistration: jetstream\n", m), nil, 0)
		}
		Eventually(query).WithTimeout(30 * time.Second).Should(Equal([]string{"10.0.0.1:80 web1", "10.0.0.2:80 web2"}))
	}
	read := func(path string) func() (string, error) {
		return func() (string, error) { b, err := os.ReadFile(path); return string(b), err }
	}

	It("gives registrations() to Jet templates as CCM documents them: jet(), resources_jet_file and a jet scaffold", func() {
		webHosts()
		lb := &harness{dir: GinkgoT().TempDir(), js: js, facts: map[string]any{"identity": "lb1"}}
		const jetRange = `[[ range _, entry := registrations("production", "http", "web", "*") ]]server [[ entry.Address ]]:[[ entry.Port ]] weight [[ 256 - entry.Priority ]]
[[ end ]]`
		inline, fromFile, scaffolded := filepath.Join(lb.dir, "inline.conf"), filepath.Join(lb.dir, "jetfile.conf"), filepath.Join(lb.dir, "site")
		inlineM := filepath.Join(lb.dir, "inline.yaml")
		Expect(os.WriteFile(inlineM, fmt.Appendf(nil, "data:\n  upstreams: %q\nccm:\n  resources:\n    - file:\n        - %q:\n            ensure: present\n            owner: root\n            group: root\n            mode: \"0644\"\n            content: \"{{ jet(data.upstreams) }}\"\n", jetRange, inline), 0o600)).To(Succeed())
		jd := filepath.Join(lb.dir, "jetfile")
		Expect(os.MkdirAll(filepath.Join(jd, "tpl"), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(jd, "tpl", "upstreams.conf"), []byte(jetRange), 0o600)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(jd, "resources.jet"), fmt.Appendf(nil, `- file:
    - %q:
        ensure: present
        owner: root
        group: root
        mode: "0644"
        content: "[[ range _, e := registrations("production", "http", "web", "*") ]][[ e.Address ]] [[ end ]]"
- scaffold:
    - %q:
        source: %q
        engine: jet
`, fromFile, scaffolded, filepath.Join(jd, "tpl")), 0o600)).To(Succeed())
		jetM := filepath.Join(jd, "manifest.yaml")
		Expect(os.WriteFile(jetM, []byte("ccm:\n  resources_jet_file: resources.jet\n"), 0o600)).To(Succeed())
		lb.start(fmt.Sprintf("interval: 1h\nmanifests: [%s, %s]\n", inlineM, jetM), nil, 0)

		want := "server 10.0.0.1:80 weight 246\nserver 10.0.0.2:80 weight 246\n"
		Eventually(read(inline)).WithTimeout(30 * time.Second).Should(Equal(want))
		Eventually(read(fromFile)).WithTimeout(30 * time.Second).Should(Equal("10.0.0.1 10.0.0.2 "))
		Eventually(read(filepath.Join(scaffolded, "upstreams.conf"))).WithTimeout(30 * time.Second).Should(Equal(want))
	})

	It("gives registrations() to Go templates as CCM documents them: a go scaffold ranges over the entries", func() {
		webHosts()
		lb := &harness{dir: GinkgoT().TempDir(), js: js, facts: map[string]any{"identity": "lb1"}}
		tpl, site := filepath.Join(lb.dir, "tpl"), filepath.Join(lb.dir, "site")
		Expect(os.MkdirAll(tpl, 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(tpl, "upstreams.conf"), []byte(`{{ range $entry := registrations "production" "http" "web" "*" }}server {{ $entry.Address }}:{{ $entry.Port }}
{{ end }}`), 0o600)).To(Succeed())
		// The scaffold's own data replaces the run's; the lookup stays.
		Expect(os.WriteFile(filepath.Join(tpl, "count.txt"), []byte(`{{ len (registrations "production" "http" "web" "10.0.0.1") }} {{ .data.note }}`), 0o600)).To(Succeed())
		m := filepath.Join(lb.dir, "lb.yaml")
		Expect(os.WriteFile(m, fmt.Appendf(nil, "ccm:\n  resources:\n    - scaffold:\n        - %q:\n            source: %q\n            engine: go\n            data: {note: own}\n", site, tpl), 0o600)).To(Succeed())
		lb.start(fmt.Sprintf("interval: 1h\nmanifests: [%s]\n", m), nil, 0)

		Eventually(read(filepath.Join(site, "upstreams.conf"))).WithTimeout(30 * time.Second).Should(Equal("server 10.0.0.1:80\nserver 10.0.0.2:80\n"))
		Expect(read(filepath.Join(site, "count.txt"))()).To(Equal("1 own"))
	})

	It("(c) renders CCM's documented registrations() example without a fresh key's entry claiming a host or the finding's injected address and annotation (issue 39 finding 4)", func() {
		webHosts()
		// A fresh key: it binds a name of its own, claims web1, and
		// publishes the finding's values raw (signed, unvalidated).
		kp, _ := nkeys.CreateUser()
		evil, err := protocol.NewKeySigner(kp)
		Expect(err).NotTo(HaveOccurred())
		Expect(registration.BindHost(ctx, js, registration.DefaultStream, "evil1", evil)).To(Succeed())
		Expect(registration.BindHost(ctx, js, registration.DefaultStream, "web1", evil)).To(MatchError(registration.ErrHostBound))
		claim := &registration.Entry{Cluster: "production", Service: "web", Protocol: "http", Address: "10.0.0.9", Port: 80, Priority: 1, TTL: "1h", Host: "web1"}
		Expect(registration.Publish(ctx, js, claim, evil)).To(Succeed())
		raw := func(e *registration.Entry) string {
			body, err := json.Marshal(e)
			Expect(err).NotTo(HaveOccurred())
			msg := nats.NewMsg(e.PublisherSubject(evil.PublicKey()))
			msg.Data = body
			for k, v := range evil.Header(body) {
				msg.Header[k] = v
			}
			_, err = js.PublishMsg(ctx, msg)
			Expect(err).NotTo(HaveOccurred())
			return msg.Subject
		}
		badAddr := raw(&registration.Entry{Cluster: "production", Service: "web", Protocol: "http", Address: "10.0.0.9;include/etc/shadow;#", Port: 80, Priority: 1, TTL: "1h", Host: "evil1"})
		badAnn := raw(&registration.Entry{Cluster: "production", Service: "web", Protocol: "http", Address: "10.0.0.8", Port: 80, Priority: 1, TTL: "1h", Host: "evil1",
			Annotations: map[string]string{"host": "x;\n}\nserver evil {\n  listen 80;"}})

		logs := gbytes.NewBuffer()
		lb := &harness{dir: GinkgoT().TempDir(), js: js, facts: map[string]any{"identity": "lb1"}, logs: logs}
		tpl, site := filepath.Join(lb.dir, "tpl"), filepath.Join(lb.dir, "site")
		Expect(os.MkdirAll(tpl, 0o755)).To(Succeed())
		// CCM's Go template example, with the annotation CCM's example
		// registers (its hostname), twice: two lookups in one run.
		doc := `{{ range $entry := registrations "production" "http" "web" "*" }}
  server {{ $entry.Address }}:{{ $entry.Port }}; # {{ $entry.Annotations.host }}
{{ end }}`
		Expect(os.WriteFile(filepath.Join(tpl, "upstreams.conf"), []byte(doc), 0o600)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(tpl, "again.conf"), []byte(doc), 0o600)).To(Succeed())
		m := filepath.Join(lb.dir, "lb.yaml")
		Expect(os.WriteFile(m, fmt.Appendf(nil, "ccm:\n  resources:\n    - scaffold:\n        - %q:\n            source: %q\n            engine: go\n", site, tpl), 0o600)).To(Succeed())
		lb.start(fmt.Sprintf("interval: 1h\nmanifests: [%s]\n", m), nil, 0)

		want := "\n  server 10.0.0.1:80; # web1\n\n  server 10.0.0.2:80; # web2\n"
		Eventually(read(filepath.Join(site, "upstreams.conf"))).WithTimeout(30 * time.Second).Should(Equal(want))
		Eventually(read(filepath.Join(site, "again.conf"))).WithTimeout(30 * time.Second).Should(Equal(want))
		for _, f := range []string{"upstreams.conf", "again.conf"} {
			text, _ := read(filepath.Join(site, f))()
			Expect(text).NotTo(Or(ContainSubstring("include"), ContainSubstring("evil"), ContainSubstring("10.0.0.9"), ContainSubstring("10.0.0.8")))
		}
		// Each refusal is logged once, with its reason, although the run
		// looked the entries up twice.
		out := string(logs.Contents())
		for subject, reason := range map[string]string{
			claim.PublisherSubject(evil.PublicKey()): "claims host web1 but is signed by " + evil.PublicKey(),
			badAddr:                                  "must be an IP address or an RFC 1123 host name",
			badAnn:                                   "annotation host: the value holds the control character",
		} {
			Expect(strings.Count(out, "subject="+subject)).To(Equal(1), subject)
			Expect(out).To(ContainSubstring(reason))
		}
	})

	It("registers a signed bundle's service only when the signer's registration.services lists it, auditing the refusal", func() {
		h := &harness{dir: GinkgoT().TempDir(), js: js, registrar: registrar("web1"), facts: map[string]any{"identity": "web1", "ip": "10.0.0.1"}}
		var err error
		h.obs, err = js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "ccm-manifests"})
		Expect(err).NotTo(HaveOccurred())
		h.ops, _ = nkeys.CreateUser()
		pub, _ := h.ops.PublicKey()
		healthy := filepath.Join(h.dir, "healthy")
		Expect(os.WriteFile(healthy, nil, 0o600)).To(Succeed())
		h.put("web.tar.gz", webManifest(filepath.Join(h.dir, "site"), healthy, "web")+
			fmt.Sprintf("    - file:\n        - %q:\n            ensure: present\n            content: \"db\\n\"\n            owner: root\n            group: root\n            mode: \"0644\"\n            register_when_stable:\n              - {cluster: production, service: db, protocol: http, address: 10.0.0.1, port: 5432, priority: 1}\n", filepath.Join(h.dir, "db")),
			h.ops, time.Now())
		pol := policyFrom(fmt.Sprintf("signers:\n  - name: ops\n    public_key: %s\n    allow: [file, exec]\n    registration:\n      services: [web]\n", pub))
		h.start("interval: 1h\nmanifests: [obj://ccm-manifests/web.tar.gz]\nregistration: jetstream\n", pol, time.Hour)

		Eventually(query).WithTimeout(30 * time.Second).Should(Equal([]string{"10.0.0.1:80 web1"}))
		Eventually(h.auditLines).Should(And(ContainSubstring(`"decision":"forbidden"`), ContainSubstring(`"value":"db"`)))
		recs, _, err := registration.Query(ctx, js, registration.DefaultStream, &registration.Trust{JS: js, Stream: registration.DefaultStream}, "*", "*", "db", "*")
		Expect(err).NotTo(HaveOccurred())
		Expect(recs).To(BeEmpty())
	})

	It("judges a local manifest's registrations with the policy's own registration.services, refusing an unlisted service clearly and auditing it", func() {
		h := &harness{dir: GinkgoT().TempDir(), js: js, registrar: registrar("web1"), facts: map[string]any{"identity": "web1", "ip": "10.0.0.1"}}
		healthy := filepath.Join(h.dir, "healthy")
		Expect(os.WriteFile(healthy, nil, 0o600)).To(Succeed())
		m := filepath.Join(h.dir, "web.yaml")
		Expect(os.WriteFile(m, []byte(webManifest(filepath.Join(h.dir, "site"), healthy, "web")+
			fmt.Sprintf("    - file:\n        - %q:\n            ensure: present\n            content: \"db\\n\"\n            owner: root\n            group: root\n            mode: \"0644\"\n            register_when_stable:\n              - {cluster: production, service: db, protocol: http, address: 10.0.0.1, port: 5432, priority: 1}\n", filepath.Join(h.dir, "db"))), 0o600)).To(Succeed())
		pol := policyFrom("registration:\n  services: [web]\n")
		h.start(fmt.Sprintf("interval: 1h\nmanifests: [%s]\nregistration: jetstream\n", m), pol, 0)

		Eventually(query).WithTimeout(30 * time.Second).Should(Equal([]string{"10.0.0.1:80 web1"}))
		Eventually(h.auditLines).Should(And(ContainSubstring(`"decision":"forbidden"`), ContainSubstring(`"value":"db"`),
			ContainSubstring(`registration of service \"db\" by file#`+filepath.Join(h.dir, "db")+` refused: the service is not listed (registration.services [web])`)))
		recs, _, err := registration.Query(ctx, js, registration.DefaultStream, &registration.Trust{JS: js, Stream: registration.DefaultStream}, "*", "*", "db", "*")
		Expect(err).NotTo(HaveOccurred())
		Expect(recs).To(BeEmpty())
	})

	It("registers nothing from a local manifest when the policy has no registration.services", func() {
		h := &harness{dir: GinkgoT().TempDir(), js: js, registrar: registrar("web1"), facts: map[string]any{"identity": "web1", "ip": "10.0.0.1"}}
		healthy := filepath.Join(h.dir, "healthy")
		Expect(os.WriteFile(healthy, nil, 0o600)).To(Succeed())
		m := filepath.Join(h.dir, "web.yaml")
		site := filepath.Join(h.dir, "site")
		Expect(os.WriteFile(m, []byte(webManifest(site, healthy, "web")), 0o600)).To(Succeed())
		kp, _ := nkeys.CreateUser()
		pub, _ := kp.PublicKey()
		h.start(fmt.Sprintf("interval: 1h\nmanifests: [%s]\nregistration: jetstream\n", m), policyFrom(fmt.Sprintf("signers:\n  - name: ops\n    public_key: %s\n    allow: [file]\n    registration: {services: [web]}\n", pub)), 0)
		Eventually(h.auditLines).WithTimeout(30 * time.Second).Should(ContainSubstring(`this host's own manifests may not register services (registration.services (none))`))
		Expect(site).To(BeAnExistingFile())
		Expect(query()).To(BeEmpty())
	})
})
