package broker_test

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker"
)

// userKey is a public user nkey made for these specs.
func userKey() string {
	GinkgoHelper()
	kp, err := nkeys.CreateUser()
	Expect(err).NotTo(HaveOccurred())
	pub, err := kp.PublicKey()
	Expect(err).NotTo(HaveOccurred())
	return pub
}

var _ = Describe("AuthFile", func() {
	It("decodes users with nkeys, passwords and nats-server permissions", func() {
		key := userKey()
		a, err := broker.ParseAuthFile([]byte(`
users:
  - nkey: ` + key + `
    permissions:
      publish: {allow: ["ccm.v1.history.*.web1"], deny: ["ccm.v1.req.>"]}
      subscribe: {allow: ["ccm.v1.req.node.web1", "ccm.v1.work q1"]}
      allow_responses: true
  - user: ops
    password: "$2a$11$W2zko751KUvVy59mUTWmpOdWjpEm5qhcCZRd05GjI/sSOT.xtiHyG"
    permissions:
      allow_responses: {max: 3, expires: 30s}
  - user: admin
    password: plain
`))
		Expect(err).NotTo(HaveOccurred())
		Expect(a.Users).To(HaveLen(3))
		Expect(a.Users[0].NKey).To(Equal(key))
		Expect(a.Users[0].Permissions.Publish.Deny).To(Equal([]string{"ccm.v1.req.>"}))
		Expect(a.Users[0].Permissions.Subscribe.Allow).To(ContainElement("ccm.v1.work q1"))
		Expect(*a.Users[0].Permissions.AllowResponses).To(Equal(broker.ResponseRule{Enabled: true}))
		Expect(*a.Users[1].Permissions.AllowResponses).To(Equal(broker.ResponseRule{Enabled: true, Max: 3, Expires: 30 * time.Second}))
		Expect(a.Users[2].Permissions).To(BeNil())
	})

	DescribeTable("refuses a file that does not describe valid users, naming the problem",
		func(doc, want string) {
			_, err := broker.ParseAuthFile([]byte(strings.ReplaceAll(doc, "KEY", userKey())))
			Expect(err).To(MatchError(broker.ErrInvalidAuth))
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("empty", ``, "empty"),
		Entry("no users", `users: []`, "at least one user"),
		Entry("unknown field", `{users: [{user: a, password: b, pasword: c}]}`, "pasword"),
		Entry("unknown top-level field", `{users: [{user: a, password: b}], accounts: {}}`, "accounts"),
		Entry("nkey and password", `users: [{nkey: KEY, user: a, password: b}]`, "exclusive"),
		Entry("neither", `users: [{permissions: {}}]`, "either nkey or user and password"),
		Entry("seed instead of public key", `users: [{nkey: SUAIBDPBAUTWCWBKIO6XHQNINK5FWJW4OHLXC3HQ2KFE4PEJUA44CNHTC4}]`, "not a public user nkey"),
		Entry("account key", `users: [{nkey: ADQMR6ZVYAYUTOOOWHU7EEFEPFLNDOJJ7EVJ6RH6IRH7TSVO3SCY4YQL}]`, "not a public user nkey"),
		Entry("no password", `users: [{user: ops}]`, "password is required"),
		Entry("reserved user", `users: [{user: ccm-broker-internal, password: x}]`, "reserved"),
		Entry("duplicate user", `users: [{user: ops, password: a}, {user: ops, password: b}]`, "the same user as users[0]"),
		Entry("bad publish subject", `users: [{user: a, password: b, permissions: {publish: {allow: ["ccm..req"]}}}]`, `publish.allow "ccm..req"`),
		Entry("wildcard in the middle", `users: [{user: a, password: b, permissions: {subscribe: {deny: ["ccm.>.x"]}}}]`, `subscribe.deny "ccm.>.x"`),
		Entry("bad responses", `users: [{user: a, password: b, permissions: {allow_responses: yes please}}]`, "allow_responses"),
		Entry("bad expiry", `users: [{user: a, password: b, permissions: {allow_responses: {expires: soon}}}]`, `expires "soon"`),
		Entry("anchors", "users:\n  - &u {user: a, password: b}\n  - *u\n", "anchors"),
		Entry("two documents", "users: [{user: a, password: b}]\n---\nusers: []\n", "more than one"),
	)

	It("names the file it cannot read", func() {
		path := filepath.Join(GinkgoT().TempDir(), "missing.yaml")
		_, err := broker.LoadAuthFile(path)
		Expect(err).To(MatchError(broker.ErrInvalidAuth))
		Expect(err.Error()).To(ContainSubstring(path))

		big := filepath.Join(GinkgoT().TempDir(), "big.yaml")
		Expect(os.WriteFile(big, make([]byte, broker.MaxAuthFileSize+1), 0o600)).To(Succeed())
		_, err = broker.LoadAuthFile(big)
		Expect(err).To(MatchError(ContainSubstring("larger than")))
	})
})
