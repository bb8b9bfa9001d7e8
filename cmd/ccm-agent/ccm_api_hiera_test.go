package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// CCM's "ensure api pipe" shares the manager of "ensure": it reads ./.hiera
// (or --hiera FILE, or CCM_HIERA_DATA) and ./.env as "ensure" does
// (cmd/ensure_api.go and cmd/ensure.go of github.com/choria-io/ccm).
var _ = Describe("ccm-agent ensure api pipe data from ./.hiera and ./.env", func() {
	var dir string
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		GinkgoT().Chdir(dir)
		Expect(os.WriteFile(filepath.Join(dir, ".hiera"), []byte(`
hierarchy:
  order: ["role:{{ lookup('facts.role', 'none') }}"]
data:
  motd: plain
  who: hiera
overrides:
  role:web:
    motd: web-api-canary-4f2
`), 0o644)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, ".env"), []byte("CCM_API_DOTENV=\"api-dotenv-4f2\"\n"), 0o644)).To(Succeed())
	})

	request := func(out string) string {
		return `{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"file","properties":{"name":"` + out +
			`","ensure":"present","owner":"root","group":"root","mode":"0644",` +
			`"content":"{{ lookup('data.motd') }} {{ lookup('data.who') }} {{ lookup('env.CCM_API_DOTENV', 'unset') }}"}}`
	}

	It("resolves ./.hiera with the facts and reads ./.env", func() {
		out := filepath.Join(dir, "out")
		code, resp := pipeIn(request(out), "--fact", "role=web")
		Expect(code).To(Equal(0))
		Expect(resp).ToNot(HaveKey("error"))
		Expect(os.ReadFile(out)).To(Equal([]byte("web-api-canary-4f2 hiera api-dotenv-4f2")))

		code, resp = pipeIn(request(out))
		Expect(code).To(Equal(0))
		Expect(resp).ToNot(HaveKey("error"))
		Expect(os.ReadFile(out)).To(Equal([]byte("plain hiera api-dotenv-4f2")))
	})

	It("takes --hiera and --no-read-env before api, and --data over the hierarchy's data", func() {
		other := filepath.Join(dir, "other.yaml")
		Expect(os.WriteFile(other, []byte("data: {motd: other, who: other}\n"), 0o644)).To(Succeed())
		data := filepath.Join(dir, "data.yaml")
		Expect(os.WriteFile(data, []byte("who: from-data\n"), 0o644)).To(Succeed())
		out := filepath.Join(dir, "out")
		var stdout, stderr bytes.Buffer
		code := runWithStdin([]string{"ensure", "--hiera", other, "--no-read-env", "api", "pipe", "--data", data},
			strings.NewReader(request(out)), &stdout, &stderr)
		Expect(code).To(Equal(0), stdout.String()+stderr.String())
		Expect(os.ReadFile(out)).To(Equal([]byte("other from-data unset")))
	})

	It("answers with an error naming the file when ./.hiera is invalid", func() {
		Expect(os.WriteFile(filepath.Join(dir, ".hiera"), []byte("data: [not, a, map\n"), 0o644)).To(Succeed())
		out := filepath.Join(dir, "out")
		code, resp := pipeIn(request(out))
		Expect(code).To(Equal(0))
		Expect(resp["error"]).To(ContainSubstring(".hiera"))
		Expect(filepath.Join(dir, "out")).ToNot(BeAnExistingFile())
	})
})
