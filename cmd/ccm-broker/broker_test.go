package main

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
)

var _ = Describe("ccm-broker security flags", func() {
	var (
		dir string
		pki brokertest.PKI
	)
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		pki = brokertest.WritePKI(GinkgoT(), dir)
	})

	DescribeTable("exits 1 with a line naming the problem",
		func(args func() []string, want func() string) {
			code, _, errOut := brk(append([]string{"--listen", "127.0.0.1:-1", "--store", dir}, args()...)...)
			Expect(code).To(Equal(1))
			Expect(lines(errOut)).To(HaveLen(1))
			Expect(errOut).To(ContainSubstring(want()))
		},
		Entry("verify without a CA",
			func() []string {
				return []string{"--tlscert", pki.ServerCert, "--tlskey", pki.ServerKey, "--tls-verify"}
			},
			func() string { return "tls.ca: required with tls.verify" }),
		Entry("a cert without its key",
			func() []string { return []string{"--tlscert", pki.ServerCert} },
			func() string { return "tls.key: required with tls.cert" }),
		Entry("a key that does not match",
			func() []string { return []string{"--tlscert", pki.ServerCert, "--tlskey", pki.ClientKey} },
			func() string { return "tls key " + pki.ClientKey + " does not match cert " + pki.ServerCert }),
		Entry("an unreadable CA",
			func() []string {
				return []string{"--tlscert", pki.ServerCert, "--tlskey", pki.ServerKey, "--tlsca", filepath.Join(dir, "none.pem")}
			},
			func() string { return "tls ca " + filepath.Join(dir, "none.pem") }),
		Entry("an invalid auth file",
			func() []string {
				p := filepath.Join(dir, "auth.yaml")
				Expect(os.WriteFile(p, []byte("users: [{user: ops}]\n"), 0o600)).To(Succeed())
				return []string{"--auth-file", p}
			},
			func() string { return "auth.yaml: invalid broker auth file: users[0] (user ops): password is required" }),
		Entry("a store size that is not one",
			func() []string { return []string{"--max-store", "lots"} },
			func() string { return `--max-store "lots": use a size such as 20GiB or 500MB` }),
		Entry("no limit is not a store size",
			func() []string { return []string{"--max-store=-1"} },
			func() string { return `--max-store "-1": use a size such as 20GiB or 500MB` }),
	)
})
