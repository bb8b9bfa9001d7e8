package main

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("ccm-orch policy check with select", func() {
	var dir, policy string
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		Expect(os.WriteFile(p, []byte(body), 0o644)).To(Succeed())
		return p
	}
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		kp, err := nkeys.CreateUser()
		Expect(err).ToNot(HaveOccurred())
		pub, err := kp.PublicKey()
		Expect(err).ToNot(HaveOccurred())
		policy = write("policy.yaml", `signers:
  - name: web
    public_key: `+pub+`
    allow: [service]
    hosts:
      - env!=staging
      - "select: (os=debian and role=web) or role=db"
`)
	})
	check := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := run(append([]string{"policy", "check", policy}, args...), &out, &errOut)
		return code, out.String() + errOut.String()
	}
	ensure := `{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"service","properties":{"name":"nginx"}}`

	DescribeTable("judges a hosts select entry as the agent does",
		func(facts string, code int, line string) {
			req := write("req.json", ensure)
			got, out := check("--key", "web", "--request", req, "--facts", write("facts.yaml", facts))
			Expect(got).To(Equal(code), out)
			Expect(out).To(ContainSubstring(line))
		},
		Entry("a debian web host", "identity: w1\nos: debian\nrole: web\n", 0,
			`request: allowed host "w1" by hosts ["env!=staging" "select: os=debian and role=web or role=db"]`),
		Entry("a db host", "identity: d1\nos: rhel\nrole: db\n", 0, `allowed host "d1"`),
		Entry("a rhel web host", "identity: w2\nos: rhel\nrole: web\n", 2,
			`request: denied host "w2" by hosts ["env!=staging" "select: os=debian and role=web or role=db"]: this host's facts do not match it`),
		Entry("a staging db host", "identity: d2\nos: rhel\nrole: db\nenv: staging\n", 2, `denied host "d2"`),
	)

	It("exits 4 when a fleet request's select leaves the host out, 0 when it takes it in", func() {
		fleet := func(sel string) string {
			return write("fleet.json", `{"protocol":"io.choria.ccm.v1.fleet.request","id":"r1","created":"2026-01-02T03:04:05Z","filter":{"select":"`+sel+`"},"ensure":`+ensure+`}`)
		}
		facts := write("facts.yaml", "identity: w1\nos: debian\nrole: web\n")
		code, out := check("--key", "web", "--request", fleet("role=db or not os=debian"), "--facts", facts)
		Expect(code).To(Equal(4), out)
		Expect(out).To(ContainSubstring("not targeted"))
		code, out = check("--key", "web", "--request", fleet("role=db or os=debian"), "--facts", facts)
		Expect(code).To(Equal(0), out)
	})

	It("exits 1 on a policy whose select entry does not parse, naming it and the position", func() {
		Expect(os.WriteFile(policy, []byte("signers:\n  - name: web\n    public_key: UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4\n    allow: [service]\n    hosts: [\"select: role=web or\"]\n"), 0o644)).To(Succeed())
		code, out := check("--key", "web", "--request", write("req.json", ensure), "--facts", write("facts.yaml", "identity: w1\n"))
		Expect(code).To(Equal(1))
		Expect(out).To(ContainSubstring(`hosts[0] "select: role=web or": select: at 12: expected a term, '(' or 'not', got the end`))
	})
})
