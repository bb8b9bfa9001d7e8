package main

import (
	"context"
	"encoding/json"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
)

// jsonRecords parses every non-empty line of s as one JSON object.
func jsonRecords(s string) []map[string]any {
	var out []map[string]any
	for _, l := range lines(s) {
		var rec map[string]any
		Expect(json.Unmarshal([]byte(l), &rec)).To(Succeed(), "a line that is not a JSON object: %q", l)
		out = append(out, rec)
	}
	return out
}

var _ = Describe("ccm-broker --log-format json", func() {
	It("writes every line as a JSON object, from start to stop", func() {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		out, errOut := gbytes.NewBuffer(), gbytes.NewBuffer()
		done := make(chan int, 1)
		go func() {
			done <- runContext(ctx, []string{"--log-format", "json", "-v", "--listen", "127.0.0.1:-1", "--store", GinkgoT().TempDir()}, out, errOut)
		}()
		Eventually(errOut).WithTimeout(fleetTimeout).Should(gbytes.Say(`"msg":"history ready"`))
		cancel()
		Eventually(done).WithTimeout(fleetTimeout).Should(Receive(Equal(0)))

		stdout := jsonRecords(string(out.Contents()))
		Expect(stdout).To(ContainElement(And(HaveKeyWithValue("msg", "broker listening"), HaveKeyWithValue("url", HavePrefix("nats://127.0.0.1:")))))
		stderr := jsonRecords(string(errOut.Contents()))
		Expect(stderr).To(ContainElement(And(HaveKeyWithValue("msg", "history ready"), HaveKeyWithValue("stream", "CCM_HISTORY"), HaveKeyWithValue("level", "INFO"))))
		Expect(len(stderr)).To(BeNumerically(">", 1), "-v logs more than the notices")
	})

	It("writes the error it exits with as a JSON object", func() {
		code, out, errOut := brk("--log-format", "json", "--listen", "nowhere")
		Expect(code).To(Equal(1))
		Expect(out).To(BeEmpty())
		recs := jsonRecords(errOut)
		Expect(recs).To(HaveLen(1))
		Expect(recs[0]).To(HaveKeyWithValue("level", "ERROR"))
		Expect(recs[0]["msg"]).To(ContainSubstring("nowhere"))
		Expect(recs[0]["msg"]).NotTo(HavePrefix("ccm-broker: "))
	})

	It("keeps the plain lines without it", func() {
		code, _, errOut := brk("--listen", "nowhere")
		Expect(code).To(Equal(1))
		Expect(strings.HasPrefix(errOut, "ccm-broker: ")).To(BeTrue(), errOut)
	})
})
