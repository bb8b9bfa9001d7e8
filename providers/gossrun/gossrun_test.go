package gossrun_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/gossrun"
)

func rules(m map[string]any) []byte {
	b, err := json.Marshal(m)
	Expect(err).ToNot(HaveOccurred())
	return b
}

var _ = Describe("Runner", func() {
	var (
		dir, conf string
		r         *gossrun.Runner
	)
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		conf = filepath.Join(dir, "app.conf")
		Expect(os.WriteFile(conf, []byte("listen 8080\n"), 0o640)).To(Succeed())
		r = gossrun.New()
	})

	It("passes rules that hold on a real file and a real command", func() {
		out, err := r.RunGoss(context.Background(), rules(map[string]any{
			"file":    map[string]any{conf: map[string]any{"exists": true, "mode": "0640", "contents": []string{"listen 8080"}}},
			"command": map[string]any{"cat " + conf: map[string]any{"exit-status": 0, "stdout": []string{"8080"}}},
		}), 30*time.Second)
		Expect(err).ToNot(HaveOccurred())
		Expect(out.Failed).To(Equal(0))
		Expect(out.Tests).To(Equal(5))
		Expect(out.Failures).To(BeEmpty())
		Expect(out.Summary).To(HavePrefix("Count: 5, Failed: 0"))
	})

	It("fails rules that do not hold, naming each failed test", func() {
		out, err := r.RunGoss(context.Background(), rules(map[string]any{
			"file":    map[string]any{conf: map[string]any{"exists": true, "contents": []string{"listen 443"}}},
			"command": map[string]any{"exit 3": map[string]any{"exit-status": 0}},
		}), 30*time.Second)
		Expect(err).ToNot(HaveOccurred())
		Expect(out.Tests).To(Equal(3))
		Expect(out.Failed).To(Equal(2))
		Expect(out.Summary).To(HavePrefix("Count: 3, Failed: 2"))
		Expect(out.Failures).To(HaveLen(2))
		Expect(out.Failures).To(ContainElement(ContainSubstring("File: " + conf + ": contents")))
		Expect(out.Failures).To(ContainElement(ContainSubstring("Command: exit 3: exit-status")))
	})

	It("keeps what goss logs of a command's output off the process's log", func() {
		const canary = "gossrun-log-canary-41c9"
		var buf bytes.Buffer
		prev := log.Writer()
		log.SetOutput(&buf)
		DeferCleanup(func() { log.SetOutput(prev) })
		out, err := r.RunGoss(context.Background(), rules(map[string]any{
			"command": map[string]any{"echo " + canary: map[string]any{"exit-status": 0, "stdout": []string{"other"}}},
		}), 30*time.Second)
		Expect(err).ToNot(HaveOccurred())
		Expect(out.Failed).To(Equal(1))
		log.Print("a line of the agent's own")
		Expect(buf.String()).To(HaveSuffix(" a line of the agent's own\n"))
		Expect(buf.String()).ToNot(ContainSubstring(canary))
		Expect(strings.Count(buf.String(), "\n")).To(Equal(1))
	})

	It("says rules goss cannot read are not rules", func() {
		_, err := r.RunGoss(context.Background(), []byte(`{"file": "not a map"}`), 30*time.Second)
		Expect(err).To(MatchError(gossrun.ErrRules))
	})

	It("returns at the timeout", func() {
		_, err := r.RunGoss(context.Background(), rules(map[string]any{
			"command": map[string]any{"sleep 2": map[string]any{"exit-status": 0, "timeout": 5000}},
		}), 100*time.Millisecond)
		Expect(err).To(MatchError(gossrun.ErrTimeout))
	})
})
