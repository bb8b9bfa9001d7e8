package policy_test

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/trust/policy"
)

func userKey() string {
	kp, err := nkeys.CreateUser()
	Expect(err).ToNot(HaveOccurred())
	pub, err := kp.PublicKey()
	Expect(err).ToNot(HaveOccurred())
	return pub
}

var _ = Describe("Policy", func() {
	var ops, dev string
	BeforeEach(func() { ops, dev = userKey(), userKey() })

	It("parses a policy with defaults", func() {
		p, err := policy.ParsePolicy([]byte("signers:\n  - name: ops\n    public_key: " + ops + "\n    allow: [file, exec]\n    shell: true\n  - name: dev\n    public_key: " + dev + "\n    allow: [file]\n    noop_only: true\n"))
		Expect(err).ToNot(HaveOccurred())
		Expect(p.Insecure).To(BeFalse())
		Expect(p.MaxClockSkew).To(Equal(policy.DefaultMaxClockSkew))
		Expect(p.Signers).To(HaveLen(2))
		Expect(p.Signers[0]).To(Equal(policy.Signer{Name: "ops", PublicKey: ops, Allow: []string{"file", "exec"}, Shell: true}))
		Expect(p.Signers[1].NoopOnly).To(BeTrue())
	})

	It("parses an insecure policy with no signers and a skew", func() {
		p, err := policy.ParsePolicy([]byte("insecure: true\nmax_clock_skew: 2m\n"))
		Expect(err).ToNot(HaveOccurred())
		Expect(p.Insecure).To(BeTrue())
		Expect(p.MaxClockSkew).To(Equal(2 * time.Minute))
	})

	DescribeTable("refuses an invalid policy, naming the problem",
		func(doc func(ops, dev string) string, want string) {
			_, err := policy.ParsePolicy([]byte(doc(ops, dev)))
			Expect(err).To(MatchError(policy.ErrPolicy))
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry("empty", func(_, _ string) string { return "" }, "empty"),
		Entry("unknown top-level field", func(_, _ string) string { return "insecur: true\n" }, `unknown key "insecur"`),
		Entry("unknown signer field", func(o, _ string) string {
			return "signers:\n  - name: ops\n    public_key: " + o + "\n    allow: [file]\n    shel: true\n"
		}, `signers[0]: unknown key "shel"`),
		Entry("skew too large", func(_, _ string) string { return "max_clock_skew: 2h\n" }, "max_clock_skew 2h0m0s"),
		Entry("negative skew", func(_, _ string) string { return "max_clock_skew: -1s\n" }, "max_clock_skew -1s"),
		Entry("skew not a duration", func(_, _ string) string { return "max_clock_skew: soon\n" }, "soon"),
		Entry("missing name", func(o, _ string) string {
			return "signers:\n  - public_key: " + o + "\n    allow: [file]\n"
		}, "signers[0]: name is required"),
		Entry("bad name", func(o, _ string) string {
			return "signers:\n  - name: \"a b\"\n    public_key: " + o + "\n    allow: [file]\n"
		}, `signers[0]: name "a b"`),
		Entry("duplicate name", func(o, d string) string {
			return "signers:\n  - name: ops\n    public_key: " + o + "\n    allow: [file]\n  - name: ops\n    public_key: " + d + "\n    allow: [file]\n"
		}, "signers[1] ops: name is also the name of signers[0]"),
		Entry("duplicate key", func(o, _ string) string {
			return "signers:\n  - name: ops\n    public_key: " + o + "\n    allow: [file]\n  - name: dev\n    public_key: " + o + "\n    allow: [file]\n"
		}, "signers[1] dev: public_key is also the key of signers[0]"),
		Entry("missing key", func(_, _ string) string {
			return "signers:\n  - name: ops\n    allow: [file]\n"
		}, "signers[0] ops: public_key: no public key"),
		Entry("key that is not a user key", func(_, _ string) string {
			return "signers:\n  - name: ops\n    public_key: UNOTAKEY\n    allow: [file]\n"
		}, "signers[0] ops: public_key:"),
		Entry("seed instead of a public key", func(_, _ string) string {
			kp, _ := nkeys.CreateUser()
			seed, _ := kp.Seed()
			return "signers:\n  - name: ops\n    public_key: " + string(seed) + "\n    allow: [file]\n"
		}, "is not an nkeys user public key"),
		Entry("no allowed types", func(o, _ string) string {
			return "signers:\n  - name: ops\n    public_key: " + o + "\n"
		}, "signers[0] ops: allow must list at least one resource type"),
		Entry("unknown type", func(o, _ string) string {
			return "signers:\n  - name: ops\n    public_key: " + o + "\n    allow: [file, cron]\n"
		}, `signers[0] ops: allow: unknown resource type "cron"`),
		Entry("shell without exec", func(o, _ string) string {
			return "signers:\n  - name: ops\n    public_key: " + o + "\n    allow: [file]\n    shell: true\n"
		}, "signers[0] ops: shell: true needs exec in allow"),
		Entry("allow not a list", func(o, _ string) string {
			return "signers:\n  - name: ops\n    public_key: " + o + "\n    allow: file\n"
		}, "signers[0].allow: expected a list, got string"),
		Entry("noop_only not a boolean", func(o, _ string) string {
			return "signers:\n  - name: ops\n    public_key: " + o + "\n    allow: [file]\n    noop_only: maybe\n"
		}, "signers[0].noop_only: expected true or false, got string"),
		Entry("assignments_admin not a boolean", func(o, _ string) string {
			return "signers:\n  - name: ops\n    public_key: " + o + "\n    allow: [file]\n    assignments_admin: yes please\n"
		}, "signers[0].assignments_admin: expected true or false, got string"),
		Entry("assignments_admin misspelt", func(o, _ string) string {
			return "signers:\n  - name: ops\n    public_key: " + o + "\n    allow: [file]\n    assignment_admin: true\n"
		}, `unknown key "assignment_admin"`),
		Entry("a net.urls prefix with a password", func(o, _ string) string {
			return "signers:\n  - name: ops\n    public_key: " + o + "\n    allow: [archive]\n    net:\n      urls: [\"https://u:pw@repo.example.com/\"]\n"
		}, `signers[0] ops: net.urls[0] "https://u:pw@repo.example.com/": user information`),
		Entry("net.urls misspelt", func(o, _ string) string {
			return "signers:\n  - name: ops\n    public_key: " + o + "\n    allow: [archive]\n    net:\n      url: [\"https://repo.example.com/\"]\n"
		}, `unknown key "url"`),
		Entry("net.urls in another case", func(o, _ string) string {
			return "signers:\n  - name: ops\n    public_key: " + o + "\n    allow: [archive]\n    net:\n      URLS: [\"https://repo.example.com/\"]\n"
		}, `unknown key "URLS"`),
		Entry("net.urls twice (the second would widen the first)", func(o, _ string) string {
			return "signers:\n  - name: ops\n    public_key: " + o + "\n    allow: [archive]\n    net:\n      urls: [\"https://repo.example.com/r/\"]\n      urls: [\"http://127.0.0.1/\"]\n"
		}, `key "urls" appears twice`),
		Entry("assignments_admin of a noop_only signer", func(o, _ string) string {
			return "signers:\n  - name: ops\n    public_key: " + o + "\n    allow: [file]\n    noop_only: true\n    assignments_admin: true\n"
		}, "signers[0] ops: assignments_admin: true cannot go with noop_only: true"),
	)

	It("names the file when loading fails", func() {
		path := filepath.Join(GinkgoT().TempDir(), "policy.yaml")
		Expect(os.WriteFile(path, []byte("signers: [{name: ops}]\n"), 0o600)).To(Succeed())
		_, err := policy.LoadPolicy(path)
		Expect(err).To(MatchError(policy.ErrPolicy))
		Expect(err.Error()).To(HavePrefix("policy " + path + ": "))
		_, err = policy.LoadPolicy(filepath.Join(GinkgoT().TempDir(), "missing.yaml"))
		Expect(err).To(MatchError(policy.ErrPolicy))
	})

	It("reads the commented example in dist/ as shipped, and with real keys put in", func() {
		data, err := os.ReadFile("../../dist/policy.yaml")
		Expect(err).ToNot(HaveOccurred())
		// As installed, the policy loads (the agent starts) and its keys
		// are valid ones nobody holds the seed of.
		p, err := policy.ParsePolicy(data)
		Expect(err).ToNot(HaveOccurred())
		Expect(p.Signers).To(HaveLen(3))
		Expect(p.Signers[1].Name).To(Equal("web"))
		Expect([]string(p.Signers[1].Hosts)).To(Equal([]string{"role=web"}))
		Expect(p.Signers[1].Exec.Commands).To(ContainElement("/usr/sbin/nginx -s reload"))
		Expect(p.Signers[1].Deny.File.Paths).To(Equal([]string{"/etc/nginx/ssl/"}))
		Expect(p.Signers[2].NoopOnly).To(BeTrue())
		// The compliance signer reads only what it lists, secrets denied.
		Expect(p.Signers[2].File.ReadPaths).To(Equal([]string{"/etc/"}))
		Expect(p.Signers[2].Deny.File.ReadPaths).To(ContainElements("/etc/shadow", "/etc/gshadow", "/etc/ssl/private/"))
		Expect(p.Signers[0].AssignmentsAdmin).To(BeTrue(), "ops may replace and remove any assignment")
		Expect(p.Signers[1].AssignmentsAdmin).To(BeFalse())
		doc := strings.NewReplacer(p.Signers[0].PublicKey, ops, p.Signers[2].PublicKey, dev).Replace(string(data))
		p, err = policy.ParsePolicy([]byte(doc))
		Expect(err).ToNot(HaveOccurred())
		Expect(p.Signers[0].PublicKey).To(Equal(ops))
	})
})
