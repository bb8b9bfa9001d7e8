package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
)

func TestCCMBroker(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "ccm-broker Suite")
}

// fleetTimeout bounds how long a broker may take to start and stop.
const fleetTimeout = time.Minute

// brk runs the CLI in-process and returns exit code, stdout and stderr.
func brk(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// lines splits output into its non-empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

var _ = Describe("ccm-broker", func() {
	It("serves clients until its context ends", func() {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		out, errOut := gbytes.NewBuffer(), gbytes.NewBuffer()
		done := make(chan int, 1)
		go func() {
			done <- runContext(ctx, []string{"--listen", "127.0.0.1:-1", "--store", GinkgoT().TempDir()}, out, errOut)
		}()
		Eventually(out).WithTimeout(fleetTimeout).Should(gbytes.Say(`broker listening on (nats://127\.0\.0\.1:\d+)\n`))
		url := strings.TrimSpace(strings.TrimPrefix(string(out.Contents()), "broker listening on "))
		nc, err := nats.Connect(url)
		Expect(err).NotTo(HaveOccurred())
		Expect(nc.Flush()).To(Succeed())
		nc.Close()
		cancel()
		Eventually(done).WithTimeout(fleetTimeout).Should(Receive(Equal(0)))
	})

	It("exits 1 with one line when it cannot listen", func() {
		code, _, errOut := brk("--listen", "nowhere")
		Expect(code).To(Equal(1))
		Expect(lines(errOut)).To(HaveLen(1))
	})
})
