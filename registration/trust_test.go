package registration_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/registration"
)

// The hostile values of issue 39 finding 4: an address that ends a
// directive and includes a file, and an annotation that opens a block.
const (
	hostileAddress    = "10.0.0.9;include/etc/shadow;#"
	hostileAnnotation = "x\nserver evil {"
)

// rawSigned publishes body as an entry for e's endpoint, signed by signer
// at its own subject, without any validation: what a holder of a key
// that skips the publisher's checks can put in the stream.
func rawSigned(ctx context.Context, js jetstream.JetStream, e *registration.Entry, body any, signer *protocol.KeySigner) string {
	GinkgoHelper()
	data, err := json.Marshal(body)
	Expect(err).NotTo(HaveOccurred())
	msg := nats.NewMsg(e.PublisherSubject(signer.PublicKey()))
	msg.Data = data
	for k, v := range signer.Header(data) {
		msg.Header[k] = v
	}
	_, err = js.PublishMsg(ctx, msg)
	Expect(err).NotTo(HaveOccurred())
	return msg.Subject
}

var _ = Describe("Validation", func() {
	DescribeTable("addresses",
		func(addr string, ok bool) {
			err := registration.ValidAddress(addr)
			if ok {
				Expect(err).NotTo(HaveOccurred())
				e := web(addr, "1h")
				Expect(e.Validate()).To(Succeed())
				return
			}
			Expect(err).To(HaveOccurred())
			e := web(addr, "1h")
			err = e.Validate()
			Expect(err).To(MatchError(registration.ErrInvalid))
			Expect(err.Error()).To(ContainSubstring("address"))
		},
		Entry("IPv4", "10.0.0.9", true),
		Entry("IPv6", "2001:db8::1", true),
		Entry("IPv6 link-local", "fe80::1", true),
		Entry("IPv4-mapped IPv6", "::ffff:10.0.0.1", true),
		Entry("a host name", "web1", true),
		Entry("a fully qualified name", "web-1.example.com", true),
		Entry("a name with digits first", "1web.example.com", true),
		Entry("a 63-byte label", strings.Repeat("a", 63)+".example.com", true),
		Entry("the finding's address", hostileAddress, false),
		Entry("empty", "", false),
		Entry("';'", "10.0.0.9;", false),
		Entry("'\"'", `web"1`, false),
		Entry(`"'"`, "web'1", false),
		Entry("'{'", "web{1", false),
		Entry("'}'", "web}1", false),
		Entry("'$'", "$web", false),
		Entry("'#'", "web#1", false),
		Entry("'/'", "web/1", false),
		Entry("'_'", "web_1", false),
		Entry("'*'", "10.*", false),
		Entry("'>'", "web>", false),
		Entry("a space", "web 1", false),
		Entry("a tab", "web\t1", false),
		Entry("a newline", "web1\nserver", false),
		Entry("a NUL", "web\x001", false),
		Entry("non-ASCII", "wéb1", false),
		Entry("an IPv6 zone", "fe80::1%eth0", false),
		Entry("a port", "10.0.0.1:80", false),
		Entry("a URL", "http://web1", false),
		Entry("a bad IPv4 (numeric last label)", "10.0.0.300", false),
		Entry("an empty label", "web..example.com", false),
		Entry("a trailing dot", "web.example.com.", false),
		Entry("a leading hyphen", "-web.example.com", false),
		Entry("a trailing hyphen", "web-.example.com", false),
		Entry("a 64-byte label", strings.Repeat("a", 64)+".example.com", false),
		Entry("254 bytes", strings.Repeat("a.", 126)+"ab", false),
	)

	DescribeTable("annotations",
		func(key, value string, ok bool) {
			err := registration.ValidAnnotation(key, value)
			e := web("10.0.0.1", "1h")
			e.Annotations = map[string]string{key: value}
			if ok {
				Expect(err).NotTo(HaveOccurred())
				Expect(e.Validate()).To(Succeed())
				return
			}
			Expect(err).To(HaveOccurred())
			err = e.Validate()
			Expect(err).To(MatchError(registration.ErrInvalid))
			Expect(err.Error()).To(ContainSubstring("annotation"))
		},
		Entry("a plain pair", "zone", "a", true),
		Entry("a key with . _ - /", "app.kubernetes.io/part-of_x-y", "web", true),
		Entry("an empty value", "zone", "", true),
		Entry("a 64-byte key", strings.Repeat("k", 64), "v", true),
		Entry("a 1024-byte value", "note", strings.Repeat("v", 1024), true),
		Entry("UTF-8 text with quotes and braces", "note", `café "a" {b} $c #d`, true),
		Entry("the finding's value", "note", hostileAnnotation, false),
		Entry("an empty key", "", "v", false),
		Entry("a 65-byte key", strings.Repeat("k", 65), "v", false),
		Entry("a key with a space", "a b", "v", false),
		Entry("a key with ';'", "a;b", "v", false),
		Entry("a key with a newline", "a\nb", "v", false),
		Entry("a key with ':'", "a:b", "v", false),
		Entry("a 1025-byte value", "note", strings.Repeat("v", 1025), false),
		Entry("a newline", "note", "a\nb", false),
		Entry("a carriage return", "note", "a\rb", false),
		Entry("a tab", "note", "a\tb", false),
		Entry("a NUL", "note", "a\x00b", false),
		Entry("an escape", "note", "a\x1b[2Jb", false),
		Entry("DEL", "note", "a\x7fb", false),
		Entry("a C1 control", "note", "a\u0085b", false),
		Entry("a line separator", "note", "a\u2028b", false),
		Entry("a paragraph separator", "note", "a\u2029b", false),
		Entry("invalid UTF-8", "note", "a\xffb", false),
	)

	It("refuses a host that is no identity", func() {
		e := web("10.0.0.1", "1h")
		e.Host = "web1\nserver"
		err := e.Validate()
		Expect(err).To(MatchError(registration.ErrInvalid))
		Expect(err.Error()).To(ContainSubstring("host"))
	})
})

var _ = Describe("Registration trust (issue 39 finding 4)", func() {
	var (
		js      jetstream.JetStream
		genuine *protocol.KeySigner
		fresh   *protocol.KeySigner
		trust   *registration.Trust
		ctx     = context.Background()
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
		genuine, err = protocol.NewKeySigner(must(nkeys.CreateUser()))
		Expect(err).NotTo(HaveOccurred())
		fresh, err = protocol.NewKeySigner(must(nkeys.CreateUser()))
		Expect(err).NotTo(HaveOccurred())
		trust = &registration.Trust{JS: js, Stream: registration.DefaultStream, Registry: true}
	})

	It("(a) returns the genuine host's entry and not one a fresh key signed claiming the same host", func() {
		Expect(registration.BindHost(ctx, js, registration.DefaultStream, "web1", genuine)).To(Succeed())
		Expect(registration.Publish(ctx, js, hostWeb("10.0.0.1", "web1"), genuine)).To(Succeed())

		// The fresh key cannot take the name...
		err := registration.BindHost(ctx, js, registration.DefaultStream, "web1", fresh)
		Expect(err).To(MatchError(registration.ErrHostBound))
		Expect(err.Error()).To(ContainSubstring("host web1 is bound to key " + genuine.PublicKey()))
		// ...and its entry claiming it, at its own key's subject, is refused.
		forged := hostWeb("10.0.0.9", "web1")
		Expect(registration.Publish(ctx, js, forged, fresh)).To(Succeed())

		recs, skipped, err := registration.Query(ctx, js, registration.DefaultStream, trust, "", "", "", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(addresses(recs)).To(Equal([]string{"10.0.0.1"}))
		Expect(recs[0].Host).To(Equal("web1"))
		Expect(recs[0].Trust).To(Equal(registration.TrustBinding))
		Expect(skipped).To(ConsistOf(registration.Skipped{Subject: forged.PublisherSubject(fresh.PublicKey()),
			Reason: "claims host web1 but is signed by " + fresh.PublicKey() + ", not by the key " + genuine.PublicKey() + " the host binding holds for it"}))
	})

	It("(a) trusts the node registry's key over a binding someone else made first", func() {
		kv, err := jsstore.EnsureRegistry(ctx, js, jsstore.RegistryConfig{TTL: time.Minute})
		Expect(err).NotTo(HaveOccurred())
		rec, err := json.Marshal(&protocol.NodeRecord{Protocol: protocol.NodeProtocol, Identity: "web2", Facts: map[string]any{}, PublicKey: genuine.PublicKey(), Started: time.Now(), LastSeen: time.Now()})
		Expect(err).NotTo(HaveOccurred())
		_, err = kv.Put(ctx, "web2", rec)
		Expect(err).NotTo(HaveOccurred())
		// The fresh key binds the name before the genuine agent does.
		Expect(registration.BindHost(ctx, js, registration.DefaultStream, "web2", fresh)).To(Succeed())
		Expect(registration.Publish(ctx, js, hostWeb("10.0.0.9", "web2"), fresh)).To(Succeed())
		Expect(registration.Publish(ctx, js, hostWeb("10.0.0.2", "web2"), genuine)).To(Succeed())

		recs, skipped, err := registration.Query(ctx, js, registration.DefaultStream, trust, "", "", "", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(addresses(recs)).To(Equal([]string{"10.0.0.2"}))
		Expect(recs[0].Trust).To(Equal(registration.TrustRegistry))
		Expect(skipped).To(HaveLen(1))
		Expect(skipped[0].Reason).To(ContainSubstring("not by the key " + genuine.PublicKey() + " the node registry holds for it"))
	})

	It("(a) trusts only the keys the policy pins for a pinned host", func() {
		Expect(registration.BindHost(ctx, js, registration.DefaultStream, "web3", fresh)).To(Succeed())
		Expect(registration.Publish(ctx, js, hostWeb("10.0.0.9", "web3"), fresh)).To(Succeed())
		Expect(registration.Publish(ctx, js, hostWeb("10.0.0.3", "web3"), genuine)).To(Succeed())
		trust.Pinned = map[string][]string{"web3": {genuine.PublicKey()}}
		recs, skipped, err := registration.Query(ctx, js, registration.DefaultStream, trust, "", "", "", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(addresses(recs)).To(Equal([]string{"10.0.0.3"}))
		Expect(recs[0].Trust).To(Equal(registration.TrustPolicy))
		Expect(skipped).To(HaveLen(1))
		Expect(skipped[0].Reason).To(ContainSubstring("not by a key the policy's registration.publishers lists for it"))
	})

	It("(a) refuses an entry naming no host, or a host whose key is unknown, and a query without a trust", func() {
		e := web("10.0.0.4", "1h")
		e.Host = ""
		Expect(registration.Publish(ctx, js, e, fresh)).To(Succeed())
		Expect(registration.Publish(ctx, js, hostWeb("10.0.0.5", "ghost"), fresh)).To(Succeed())
		recs, skipped, err := registration.Query(ctx, js, registration.DefaultStream, trust, "", "", "", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(recs).To(BeEmpty())
		var reasons []string
		for _, s := range skipped {
			reasons = append(reasons, s.Reason)
		}
		Expect(reasons).To(ConsistOf(HavePrefix("names no host"), HavePrefix("claims host ghost, whose key is unknown")))
		_, _, err = registration.Query(ctx, js, registration.DefaultStream, nil, "", "", "", "")
		Expect(err).To(MatchError(registration.ErrNoTrust))
	})

	It("(a) frees a bound name with Unbind, after which another key may bind it", func() {
		Expect(registration.BindHost(ctx, js, registration.DefaultStream, "web1", genuine)).To(Succeed())
		Expect(registration.BindHost(ctx, js, registration.DefaultStream, "web1", genuine)).To(Succeed(), "a refresh")
		Expect(registration.BindHost(ctx, js, registration.DefaultStream, "web1", fresh)).To(MatchError(registration.ErrHostBound))
		Expect(registration.Unbind(ctx, js, registration.DefaultStream, "web1")).To(Succeed())
		Expect(registration.BindHost(ctx, js, registration.DefaultStream, "web1", fresh)).To(Succeed())
	})

	It("(b) refuses the finding's address and annotation at the publisher, naming the field", func() {
		Expect(registration.BindHost(ctx, js, registration.DefaultStream, "web1", genuine)).To(Succeed())
		e := hostWeb(hostileAddress, "web1")
		err := registration.Publish(ctx, js, e, genuine)
		Expect(err).To(MatchError(registration.ErrInvalid))
		Expect(err.Error()).To(ContainSubstring(`address "10.0.0.9;include/etc/shadow;#" must be an IP address or an RFC 1123 host name`))
		e = hostWeb("10.0.0.1", "web1")
		e.Annotations = map[string]string{"note": hostileAnnotation}
		err = registration.Publish(ctx, js, e, genuine)
		Expect(err).To(MatchError(registration.ErrInvalid))
		Expect(err.Error()).To(ContainSubstring(`annotations: annotation note: the value holds the control character '\n'`))
		recs, skipped, err := registration.Query(ctx, js, registration.DefaultStream, trust, "", "", "", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(recs).To(BeEmpty())
		Expect(skipped).To(BeEmpty(), "nothing was published")
	})

	It("(b) refuses the finding's address and annotation at readers when a signer publishes them raw", func() {
		Expect(registration.BindHost(ctx, js, registration.DefaultStream, "web1", genuine)).To(Succeed())
		Expect(registration.Publish(ctx, js, hostWeb("10.0.0.1", "web1"), genuine)).To(Succeed())
		addr := hostWeb(hostileAddress, "web1")
		addrSubject := rawSigned(ctx, js, addr, addr, genuine)
		ann := hostWeb("10.0.0.2", "web1")
		ann.Annotations = map[string]string{"note": hostileAnnotation}
		annSubject := rawSigned(ctx, js, ann, ann, genuine)

		recs, skipped, err := registration.Query(ctx, js, registration.DefaultStream, trust, "", "", "", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(addresses(recs)).To(Equal([]string{"10.0.0.1"}))
		Expect(skipped).To(ConsistOf(
			And(HaveField("Subject", addrSubject), HaveField("Reason", ContainSubstring("address"))),
			And(HaveField("Subject", annSubject), HaveField("Reason", ContainSubstring("annotation note")))))
		b, err := json.Marshal(recs)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(b)).NotTo(Or(ContainSubstring("include"), ContainSubstring("server evil")))
	})

	It("stops asking the node registry once the broker refuses this user its reads, trusting bindings alone", func() {
		dir := GinkgoT().TempDir()
		auth := filepath.Join(dir, "auth.yaml")
		Expect(os.WriteFile(auth, []byte("users:\n  - user: lb\n    password: lb-pw\n    permissions:\n      publish:\n        allow: [\"$JS.API.STREAM.INFO.REGISTRATION\", \"$JS.API.STREAM.MSG.GET.REGISTRATION\"]\n      subscribe:\n        allow: [\"_INBOX.>\"]\n  - user: admin\n    password: admin-pw\n"), 0o600)).To(Succeed())
		b := brokertest.StartConfig(GinkgoT(), broker.Config{AuthFile: auth})
		admin, err := nats.Connect(b.ClientURL(), nats.UserInfo("admin", "admin-pw"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(admin.Close)
		ajs, err := jetstream.New(admin)
		Expect(err).NotTo(HaveOccurred())
		_, err = registration.EnsureStream(ctx, ajs, registration.DefaultStream, 1, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(registration.BindHost(ctx, ajs, registration.DefaultStream, "web1", genuine)).To(Succeed())

		var violations atomic.Int32
		nc, err := nats.Connect(b.ClientURL(), nats.UserInfo("lb", "lb-pw"), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if strings.Contains(err.Error(), "Permissions Violation") {
				violations.Add(1)
			}
		}))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		ljs, err := jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		now := time.Now()
		t := &registration.Trust{JS: ljs, Stream: registration.DefaultStream, Registry: true, Now: func() time.Time { return now }}
		for range 3 {
			source, reason := t.Check(ctx, "web1", genuine.PublicKey())
			Expect(reason).To(BeEmpty())
			Expect(source).To(Equal(registration.TrustBinding))
			now = now.Add(time.Hour) // past every cache and retry delay
		}
		Eventually(violations.Load).Should(Equal(int32(1)))
		Consistently(violations.Load, "300ms").Should(Equal(int32(1)))
	})
})
