package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

// pipeIn runs "ensure api pipe" in-process with stdin and returns the exit
// code and the decoded response.
func pipeIn(stdin string, args ...string) (int, map[string]any) {
	GinkgoHelper()
	var out, errb bytes.Buffer
	code := runWithStdin(append([]string{"ensure", "api", "pipe"}, args...), strings.NewReader(stdin), &out, &errb)
	var resp map[string]any
	Expect(json.Unmarshal(out.Bytes(), &resp)).To(Succeed(), "stdout %q stderr %q", out.String(), errb.String())
	return code, resp
}

var _ = Describe("ccm-agent ensure api pipe", func() {
	It("applies the request on stdin and answers with the response", func() {
		path := filepath.Join(GinkgoT().TempDir(), "motd")
		code, resp := pipeIn(`{"protocol":"`+protocol.EnsureRequestProtocol+`","type":"file","properties":{"name":"`+path+`","content":"hi","owner":"root","group":"root","mode":"0644"}}`, "--noop")
		Expect(code).To(Equal(0))
		Expect(resp["protocol"]).To(Equal(protocol.EnsureResponseProtocol))
		Expect(resp["state"]).To(HaveKeyWithValue("noop_message", "Would have created the file"))
	})

	It("refuses more than a bounded request, in the response", func() {
		big := `{"protocol":"` + protocol.EnsureRequestProtocol + `","type":"file","properties":{"name":"/x","content":"` + strings.Repeat("a", maxAPIRequestBytes) + `"}}`
		code, resp := pipeIn(big)
		Expect(code).To(Equal(0))
		Expect(resp).NotTo(HaveKey("state"))
		Expect(resp["error"]).To(ContainSubstring("more than 1048576 bytes"))
	})

	It("refuses YAML aliases (a small document that would expand hugely)", func() {
		doc := "protocol: " + protocol.EnsureRequestProtocol + "\ntype: file\nproperties: &p\n  name: /x\nextra: *p\n"
		_, resp := pipeIn(doc)
		Expect(resp).NotTo(HaveKey("state"))
		Expect(resp["error"]).NotTo(BeEmpty())
	})
})
