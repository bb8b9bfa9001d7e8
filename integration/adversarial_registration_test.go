package integration_test

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
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/registration"
)

// Issue 39 finding 4: registration readers accepted entries signed by any
// key, and addresses and annotations that rewrite a load balancer's
// configuration.
var _ = Describe("Adversarial: registration trust (round 4, finding 4)", func() {
	const (
		hostileAddress = "10.0.0.9;include/etc/shadow;#"
		// what the annotation would add to a configuration
		injected = "server evil {"
	)

	It("lists and renders only entries signed by the key of the host they name, and refuses the finding's address and annotation at the publishing agent and at every reader", func() {
		ctx := context.Background()
		dir := GinkgoT().TempDir()
		b := brokertest.Start(GinkgoT())
		url := b.ClientURL()
		nc, err := nats.Connect(url)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		js := adminJS(nc)
		_, err = registration.EnsureStream(ctx, js, registration.DefaultStream, 1, time.Minute)
		Expect(err).NotTo(HaveOccurred())

		// web1, a real CCM agent, registers web at 10.0.0.1.
		m1 := filepath.Join(dir, "web1.yaml")
		Expect(os.WriteFile(m1, []byte(ccmFileManifest(filepath.Join(dir, "site1"), "served\n", "")+webRegistration("10.0.0.1", "                  hostname: web1\n")), 0o600)).To(Succeed())
		cfg1 := filepath.Join(dir, "web1-config.yaml")
		Expect(os.WriteFile(cfg1, fmt.Appendf(nil, "interval: 1h\nmanifests: [%s]\nregistration: jetstream\ncache_dir: %s\n", m1, filepath.Join(dir, "web1", "source")), 0o600)).To(Succeed())
		startProcess(ccmAgentBin(), "agent", "--config", cfg1, "--identity", "web1", "--server", url)

		// web2, a real CCM agent whose manifest carries the finding's
		// address and annotation: its agent refuses both, naming the field.
		m2 := filepath.Join(dir, "web2.yaml")
		Expect(os.WriteFile(m2, []byte(ccmFileManifest(filepath.Join(dir, "site2"), "served\n", "")+
			"            register_when_stable:\n"+
			"              - {cluster: production, service: web, protocol: http, address: \""+hostileAddress+"\", port: 80, priority: 1, ttl: 1m}\n"+
			"              - {cluster: production, service: web, protocol: http, address: 10.0.0.2, port: 80, priority: 1, ttl: 1m, annotations: {hostname: \"x;\\n}\\n"+injected+"\\n  listen 80;\"}}\n"), 0o600)).To(Succeed())
		cfg2 := filepath.Join(dir, "web2-config.yaml")
		Expect(os.WriteFile(cfg2, fmt.Appendf(nil, "interval: 1h\nmanifests: [%s]\nregistration: jetstream\ncache_dir: %s\n", m2, filepath.Join(dir, "web2", "source")), 0o600)).To(Succeed())
		web2 := startProcess(ccmAgentBin(), "agent", "--config", cfg2, "--identity", "web2", "--server", url)
		Eventually(web2.Err).WithTimeout(60 * time.Second).Should(gbytes.Say(`registrations: invalid entry.*address \\"10\.0\.0\.9;include/etc/shadow;#\\" must be an IP address or an RFC 1123 host name`))
		Eventually(web2.Err).WithTimeout(30 * time.Second).Should(gbytes.Say(`registrations: invalid entry.*annotations: annotation hostname: the value holds the control character`))

		orch := func(args ...string) (int, string, string) {
			return runOrch(append([]string{"registration", "query", "production", "http", "web"}, append(args, "--server", url)...)...)
		}
		Eventually(func() string { _, out, _ := orch("--json"); return out }).WithTimeout(60 * time.Second).Should(ContainSubstring(`"host": "web1"`))

		// A fresh key: it cannot bind web1's name, claims web1 anyway at
		// its own subjects, and publishes the finding's values raw under
		// a name of its own.
		kp, err := nkeys.CreateUser()
		Expect(err).NotTo(HaveOccurred())
		fresh, err := protocol.NewKeySigner(kp)
		Expect(err).NotTo(HaveOccurred())
		Expect(registration.BindHost(ctx, js, registration.DefaultStream, "web1", fresh)).To(MatchError(registration.ErrHostBound))
		Expect(registration.BindHost(ctx, js, registration.DefaultStream, "evil1", fresh)).To(Succeed())
		claim := &registration.Entry{Cluster: "production", Service: "web", Protocol: "http", Address: "10.0.0.7", Port: 80, Priority: 1, TTL: "1h", Host: "web1"}
		Expect(registration.Publish(ctx, js, claim, fresh)).To(Succeed())
		badAddr := publishRawEntry(ctx, js, fresh, &registration.Entry{Cluster: "production", Service: "web", Protocol: "http", Address: hostileAddress, Port: 80, Priority: 1, TTL: "1h", Host: "evil1"})
		badAnn := publishRawEntry(ctx, js, fresh, &registration.Entry{Cluster: "production", Service: "web", Protocol: "http", Address: "10.0.0.8", Port: 80, Priority: 1, TTL: "1h", Host: "evil1",
			Annotations: map[string]string{"hostname": "x;\n}\n" + injected + "\n  listen 80;"}})

		// The library...
		recs, skipped, err := registration.Query(ctx, js, registration.DefaultStream, &registration.Trust{JS: js, Stream: registration.DefaultStream, Registry: true}, "production", "http", "web", "*")
		Expect(err).NotTo(HaveOccurred())
		Expect(recs).To(HaveLen(1))
		Expect(recs[0]).To(And(HaveField("Address", "10.0.0.1"), HaveField("Entry.Host", "web1"), HaveField("Trust", registration.TrustBinding)))
		Expect(skipped).To(HaveLen(3))

		// ...and ccm-orch registration query, as JSON and as text.
		code, out, errOut := orch("--json")
		Expect(code).To(Equal(0), errOut)
		var listed []registration.Record
		Expect(json.Unmarshal([]byte(out), &listed)).To(Succeed())
		Expect(listed).To(HaveLen(1))
		Expect(listed[0]).To(And(HaveField("Address", "10.0.0.1"), HaveField("Entry.Host", "web1")))
		Expect(errOut).To(ContainSubstring("warning: entry " + claim.PublisherSubject(fresh.PublicKey()) + " dropped: claims host web1 but is signed by " + fresh.PublicKey() + ", not by the key "))
		Expect(errOut).To(ContainSubstring("warning: entry " + badAddr + " dropped: invalid registration entry: address"))
		Expect(errOut).To(ContainSubstring("warning: entry " + badAnn + " dropped: invalid registration entry: annotations: annotation hostname"))
		Expect(errOut).To(ContainSubstring("warning: 3 entries refused and not listed"))
		code, text, errText := orch()
		Expect(code).To(Equal(0), errText)
		Expect(text).To(ContainSubstring("http://10.0.0.1:80 priority 10 ttl 1m host web1"))
		for where, s := range map[string]string{"json": out, "text": text} {
			Expect(s).NotTo(Or(ContainSubstring("10.0.0.7"), ContainSubstring("10.0.0.8"), ContainSubstring("include"), ContainSubstring("evil")), where)
		}

		// A load balancer, a real CCM agent, renders CCM's documented
		// examples: the expression of the finding and the Jet backend.
		lbDir := filepath.Join(dir, "lb")
		Expect(os.MkdirAll(lbDir, 0o755)).To(Succeed())
		upstreams, backends := filepath.Join(lbDir, "upstreams.conf"), filepath.Join(lbDir, "backends.cfg")
		jetBackend := "backend web_servers\n  balance roundrobin\n" +
			`[[ range _, entry := registrations("production", "http", "web", "*") ]]` + "\n" +
			`  server [[ entry.Address ]] [[ entry.Address ]]:[[ entry.Port ]] check weight [[ 256 - entry.Priority ]] # [[ entry.Annotations["hostname"] ]]` + "\n[[ end ]]\n"
		lbM := filepath.Join(lbDir, "lb.yaml")
		Expect(os.WriteFile(lbM, []byte(fmt.Sprintf(ccmLBManifest, upstreams)+
			fmt.Sprintf("    - file:\n        - %q:\n            ensure: present\n            owner: root\n            group: root\n            mode: \"0644\"\n            content: \"{{ jet(data.backends) }}\"\n", backends)+
			fmt.Sprintf("data:\n  backends: %q\n", jetBackend)), 0o600)).To(Succeed())
		lbCfg := filepath.Join(lbDir, "config.yaml")
		Expect(os.WriteFile(lbCfg, fmt.Appendf(nil, "interval: 1h\nmanifests: [%s]\ncache_dir: %s\n", lbM, filepath.Join(lbDir, "source")), 0o600)).To(Succeed())
		lb := startProcess(ccmAgentBin(), "agent", "--config", lbCfg, "--identity", "lb1", "--server", url)
		Eventually(func() ([]byte, error) { return os.ReadFile(upstreams) }).WithTimeout(60 * time.Second).Should(Equal([]byte("server 10.0.0.1:80")))
		Eventually(func() ([]byte, error) { return os.ReadFile(backends) }).WithTimeout(30 * time.Second).Should(Equal([]byte(
			"backend web_servers\n  balance roundrobin\n\n  server 10.0.0.1 10.0.0.1:80 check weight 246 # web1\n\n")))
		Eventually(lb.Err).WithTimeout(30 * time.Second).Should(gbytes.Say("registrations: entry refused"))
		for _, f := range []string{upstreams, backends} {
			got, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(got)).NotTo(Or(ContainSubstring("include"), ContainSubstring(injected), ContainSubstring("10.0.0.7"), ContainSubstring("10.0.0.8")), f)
		}
	})
})

// publishRawEntry publishes e for its endpoint at signer's own subject,
// signed but never validated: what a key holder who skips the publisher's
// checks can put in the stream. It returns the subject.
func publishRawEntry(ctx context.Context, js jetstream.JetStream, signer *protocol.KeySigner, e *registration.Entry) string {
	GinkgoHelper()
	body, err := json.Marshal(e)
	Expect(err).NotTo(HaveOccurred())
	msg := nats.NewMsg(e.PublisherSubject(signer.PublicKey()))
	msg.Data = body
	for k, v := range signer.Header(body) {
		msg.Header[k] = v
	}
	_, err = js.PublishMsg(ctx, msg)
	Expect(err).NotTo(HaveOccurred())
	Expect(strings.HasPrefix(msg.Subject, registration.SubjectPrefix+".production.http.web.")).To(BeTrue())
	return msg.Subject
}
