package orchestrator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
	"github.com/ccm-fleet/ccm/protocol"
)

// lockedBuffer collects the agents' logs from their goroutines.
type lockedBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var _ = Describe("sensitive resources", Ordered, func() {
	const (
		canaryNew  = "CANARY-new-7f3a9c"
		canaryOld  = "CANARY-old-51be02"
		canaryData = "CANARY-data-e4d1a8"
	)
	var (
		fl       *fleettest.Fleet
		client   *orchestrator.Client
		logs     *lockedBuffer
		stateDir string
		dir      string
		ctx      = context.Background()
	)
	BeforeAll(func() {
		logs = &lockedBuffer{}
		stateDir = GinkgoT().TempDir()
		fl = fleettest.StartWith(GinkgoT(), fleettest.Options{
			History: true,
			Config:  agent.Config{StateDir: stateDir, HistoryRetry: 100 * time.Millisecond},
			Log:     slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		}, 3, map[string]any{"kernel": "Linux"})
		client = orchestrator.New(fl.Connect(GinkgoT()))
		dir = GinkgoT().TempDir()
		for _, id := range fl.Identities {
			Expect(os.Mkdir(filepath.Join(dir, id), 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, id, "secret"), []byte("token="+canaryOld+"\n"), 0o600)).To(Succeed())
		}
	})

	// everywhere returns every place the canaries must never be: the
	// result (replies, events), every history record, the agents' logs
	// and every file below their state directories (audit logs, spool).
	everywhere := func(res *orchestrator.Result) map[string]string {
		GinkgoHelper()
		places := map[string]string{}
		raw, err := json.Marshal(res)
		Expect(err).NotTo(HaveOccurred())
		places["result"] = string(raw)
		var hist strings.Builder
		Eventually(func() int {
			run, err := client.History(ctx, res.RequestID)
			if err != nil {
				return -1
			}
			return run.Result.Replied
		}).WithTimeout(10 * time.Second).Should(Equal(len(fl.Identities)))
		js, err := jetstream.New(fl.Connect(GinkgoT()))
		Expect(err).NotTo(HaveOccurred())
		Expect(jsstore.Read(ctx, js, jsstore.ReadOptions{Filter: protocol.HistoryRunSubjects(res.RequestID)}, func(r jsstore.Record) error {
			hist.Write(r.Data)
			return nil
		})).To(Succeed())
		places["history"] = hist.String()
		places["logs"] = logs.String()
		Expect(places["logs"]).To(ContainSubstring("file#"+dir), "the engine's logs were captured")
		var files strings.Builder
		Expect(filepath.Walk(stateDir, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode().IsRegular() {
				b, rerr := os.ReadFile(p)
				if rerr == nil {
					files.Write(b)
				}
			}
			return err
		})).To(Succeed())
		places["state files (audit log)"] = files.String()
		Expect(places["state files (audit log)"]).To(ContainSubstring(res.RequestID), "the audit log was read")
		Expect(places["history"]).To(ContainSubstring(`"diff"`), "history holds the events' diffs")
		return places
	}
	noCanary := func(places map[string]string) {
		GinkgoHelper()
		for where, text := range places {
			for _, c := range []string{canaryNew, canaryOld, canaryData} {
				Expect(text).NotTo(ContainSubstring(c), "%s holds %s", where, c)
			}
		}
	}

	for _, noop := range []bool{true, false} {
		It("keeps a sensitive file's content out of events, replies, history, logs and the audit log (noop "+map[bool]string{true: "true", false: "false"}[noop]+")", func() {
			req := orchestrator.Request{Noop: noop, Ensure: ensureRequest("file", map[string]any{
				"name": dir + "/{{ lookup('facts.identity') }}/secret", "content": "token=" + canaryNew + "\n",
				"owner": "root", "group": "root", "mode": "0600", "sensitive": true,
			})}
			res, err := client.Run(ctx, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Replied).To(Equal(3))
			for _, h := range res.Hosts {
				ev := h.Events[0]
				Expect(ev.Failed).To(BeFalse(), "%v", ev.Errors)
				Expect(ev.Changed).To(BeTrue())
				Expect(ev.Diff.Summary).To(Equal(protocol.DiffSensitive))
				Expect(ev.Diff.Sensitive).To(BeTrue())
			}
			noCanary(everywhere(res))
			if !noop {
				b, err := os.ReadFile(filepath.Join(dir, fl.Identities[0], "secret"))
				Expect(err).NotTo(HaveOccurred())
				Expect(string(b)).To(Equal("token=" + canaryNew + "\n"))
				for _, id := range fl.Identities {
					Expect(os.WriteFile(filepath.Join(dir, id, "secret"), []byte("token="+canaryOld+"\n"), 0o600)).To(Succeed())
				}
			}
		})
	}

	It("makes a resource sensitive when its template reads data marked sensitive", func() {
		bundle := loadBundle(`
data:
  secret: `+canaryData+`
  motd: hello
sensitive_data: [secret]
ccm:
  resources:
    - file:
        - "`+dir+`/{{ lookup('facts.identity') }}/secret":
            content: "token={{ lookup('data.secret') }}\n"
            owner: root
            group: root
            mode: "0600"
        - "`+dir+`/{{ lookup('facts.identity') }}/motd":
            content: "{{ data.motd }}\n"
            owner: root
            group: root
            mode: "0644"
`, nil)
		res, err := client.Run(ctx, orchestrator.Request{Noop: true, Manifest: bundle})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Replied).To(Equal(3))
		for _, h := range res.Hosts {
			Expect(h.Events).To(HaveLen(2))
			Expect(h.Events[0].Diff.Summary).To(Equal(protocol.DiffSensitive))
			Expect(h.Events[1].Diff.Content).To(ContainSubstring("+hello\n"), "a resource reading other data keeps its diff")
		}
		noCanary(everywhere(res))
	})
})
