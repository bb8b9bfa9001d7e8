package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

// assignmentStore starts a broker for one spec with the history stream
// and the assignments bucket, and a client connection to it.
func assignmentStore() (*broker.Broker, *nats.Conn, jetstream.JetStream) {
	b := brokertest.Start(GinkgoT())
	nc, err := nats.Connect(b.ClientURL())
	Expect(err).ToNot(HaveOccurred())
	DeferCleanup(nc.Close)
	js, err := jetstream.New(nc)
	Expect(err).ToNot(HaveOccurred())
	_, err = jsstore.EnsureHistory(context.Background(), js, jsstore.HistoryConfig{})
	Expect(err).ToNot(HaveOccurred())
	_, err = jsstore.EnsureAssignments(context.Background(), js, jsstore.AssignmentsConfig{})
	Expect(err).ToNot(HaveOccurred())
	return b, nc, js
}

// watchRecords are the history headers of identity's runs of name.
func watchRecords(js jetstream.JetStream, identity, name string) []nats.Header {
	var out []nats.Header
	Expect(jsstore.Read(context.Background(), js, jsstore.ReadOptions{Filter: protocol.HistorySubjects, HeadersOnly: true}, func(r jsstore.Record) error {
		if r.Identity == identity && r.Header.Get(protocol.HeaderAssignment) == name {
			out = append(out, r.Header)
		}
		return nil
	})).To(Succeed())
	return out
}

// watchRuns tells identity's recorded runs of name, one line each: its
// trigger and each resource's outcome with its errors (for a spec's
// failure message).
func watchRuns(js jetstream.JetStream, identity, name string) string {
	var lines []string
	err := jsstore.Read(context.Background(), js, jsstore.ReadOptions{Filter: protocol.HistorySubjects}, func(r jsstore.Record) error {
		if r.Identity != identity || r.Header.Get(protocol.HeaderAssignment) != name {
			return nil
		}
		var reply protocol.FleetReply
		if err := json.Unmarshal(r.Data, &reply); err != nil {
			lines = append(lines, fmt.Sprintf("%s: undecodable record: %v", r.RequestID, err))
			return nil
		}
		line := fmt.Sprintf("%s %s trigger=%s", r.Time.Format(time.RFC3339Nano), r.RequestID, r.Header.Get(protocol.HeaderTrigger))
		for _, ev := range reply.Events {
			line += fmt.Sprintf(" [%s changed=%t failed=%t errors=%q]", ev.ResourceID(), ev.Changed, ev.Failed, ev.Errors)
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		lines = append(lines, "history unreadable: "+err.Error())
	}
	return "the agent's runs of " + name + ":\n" + strings.Join(lines, "\n")
}

var _ = Describe("Watch-based repair", Ordered, func() {
	var (
		fa     *fleetAgent
		js     jetstream.JetStream
		client *orchestrator.Client
		ops    signingKey
		target string
		file   string
	)
	BeforeAll(func() {
		dir := GinkgoT().TempDir()
		target = filepath.Join(dir, "target")
		Expect(os.MkdirAll(target, 0o755)).To(Succeed())
		file = filepath.Join(target, "motd")
		ops = newSigningKey(dir, "ops")
		b, nc, store := assignmentStore()
		js = store
		client = orchestrator.New(nc)
		fa = &fleetAgent{b: b, identity: "watch-1", stateDir: filepath.Join(dir, "state"), policy: policyFile(dir, signerEntry("ops", ops.pub, "file")),
			facts: map[string]any{"role": "web"}}
		fa.start()
		DeferCleanup(func() { fa.stop() })
		_, err := client.Assign(context.Background(), &protocol.Assignment{
			Protocol: protocol.AssignmentProtocol, Name: "motd", Interval: protocol.Duration(time.Hour),
			Manifest: json.RawMessage(`{"manifest":{"ccm":{"resources":[{"file":[{"` + file + `":{"content":"managed\n","owner":"root","group":"root","mode":"0644","watch":true}}]}]}}}`),
		}, ops.kp)
		Expect(err).ToNot(HaveOccurred())
		Eventually(func() string { b, _ := os.ReadFile(file); return string(b) }).WithTimeout(20 * time.Second).Should(Equal("managed\n"))
	})
	content := func() string { b, _ := os.ReadFile(file); return string(b) }

	It("repairs a tampered watched file at once, recording the repair with trigger watch", func() {
		Expect(os.WriteFile(file, []byte("tampered\n"), 0o644)).To(Succeed())
		// At once means within a run of the debounce; 30 s leaves room for
		// a loaded CI machine (one fresh-clone run took more than 10 s).
		Eventually(content).WithTimeout(30*time.Second).Should(Equal("managed\n"), func() string { return watchRuns(js, "watch-1", "motd") })
		Eventually(func() []string {
			var triggers []string
			for _, h := range watchRecords(js, "watch-1", "motd") {
				triggers = append(triggers, h.Get(protocol.HeaderTrigger))
			}
			return triggers
		}).Should(ContainElement(protocol.TriggerWatch))
		// A removed file and a chmod are repaired too.
		Expect(os.Remove(file)).To(Succeed())
		Eventually(content).WithTimeout(10 * time.Second).Should(Equal("managed\n"))
		time.Sleep(3 * time.Second) // past the flap window: not a flapping file
		Expect(os.Chmod(file, 0o600)).To(Succeed())
		Eventually(func() os.FileMode { fi, _ := os.Stat(file); return fi.Mode().Perm() }).WithTimeout(10 * time.Second).Should(Equal(os.FileMode(0o644)))
	})

	It("backs off a file that keeps changing and reports it as flapping", func() {
		flaps := func() []string {
			var out []string
			for _, h := range watchRecords(js, "watch-1", "motd") {
				if f := h.Get(protocol.HeaderFlapping); f != "" {
					out = append(out, f)
				}
			}
			return out
		}
		before := len(flaps()) // the earlier tamper and removal came close together
		// Something fights the agent over the file, writing it every 50ms
		// until the backoff has doubled twice.
		Eventually(func() []string {
			Expect(os.WriteFile(file, []byte("fight\n"), 0o644)).To(Succeed())
			got := flaps()[before:]
			return got[:min(len(got), 3)]
		}).WithPolling(50 * time.Millisecond).WithTimeout(60 * time.Second).Should(HaveLen(3))
		Expect(flaps()[before:before+3]).To(Equal([]string{"500ms", "1s", "2s"}), "the wait doubles with each repair")
		_, out, _ := runOrch("status", "--json", "--server", fa.b.ClientURL())
		var rep orchestrator.StatusReport
		Expect(json.Unmarshal([]byte(out), &rep)).To(Succeed(), out)
		Expect(rep.Assignments).To(HaveLen(1))
		Expect(rep.Assignments[0].Hosts[0].Flapping).ToNot(BeEmpty(), "status says the file is flapping")
		Eventually(content).WithTimeout(20*time.Second).Should(Equal("managed\n"), "repaired once it stops")
	})

	It("stops watching when the assignment goes away", func() {
		_, err := client.RemoveAssignment(context.Background(), "motd", "test", ops.kp)
		Expect(err).ToNot(HaveOccurred())
		Eventually(func() string {
			b, _ := os.ReadFile(filepath.Join(fa.stateDir, "assignments.json"))
			return string(b)
		}).WithTimeout(10 * time.Second).Should(MatchRegexp(`"motd":\{[^}]*"removed":true`))
		Expect(os.WriteFile(file, []byte("mine\n"), 0o644)).To(Succeed())
		Consistently(content).WithTimeout(2 * time.Second).Should(Equal("mine\n"))
	})
})

// The repair latency benchmark (BENCHMARKS.md): CCM_WATCH_BENCH=1 go test
// ./integration -run TestIntegration -args -ginkgo.focus='repair latency'
// measures 100 tampers; make test runs the same spec on 3.
var _ = Describe("Watch repair latency", func() {
	It("repairs every tamper of a watched file, reporting the time from each tamper to the repaired file", func() {
		tampers := 3
		if os.Getenv("CCM_WATCH_BENCH") != "" {
			tampers = 100
		}
		dir := GinkgoT().TempDir()
		file := filepath.Join(dir, "motd")
		ops := newSigningKey(dir, "ops")
		b, nc, _ := assignmentStore()
		var err error
		fa := &fleetAgent{b: b, identity: "bench-1", stateDir: filepath.Join(dir, "state"), policy: policyFile(dir, signerEntry("ops", ops.pub, "file")), facts: map[string]any{}}
		fa.start()
		DeferCleanup(func() { fa.stop() })
		_, err = orchestrator.New(nc).Assign(context.Background(), &protocol.Assignment{
			Protocol: protocol.AssignmentProtocol, Name: "bench", Interval: protocol.Duration(time.Hour),
			Manifest: json.RawMessage(`{"manifest":{"ccm":{"resources":[{"file":[{"` + file + `":{"content":"managed\n","owner":"root","group":"root","mode":"0644","watch":true}}]}]}}}`),
		}, ops.kp)
		Expect(err).ToNot(HaveOccurred())
		content := func() string { b, _ := os.ReadFile(file); return string(b) }
		Eventually(content).WithTimeout(20 * time.Second).Should(Equal("managed\n"))
		time.Sleep(time.Second)
		var lat []time.Duration
		for i := range tampers {
			start := time.Now()
			Expect(os.WriteFile(file, []byte(fmt.Sprintf("tamper %d\n", i)), 0o644)).To(Succeed())
			Eventually(content).WithTimeout(30*time.Second).WithPolling(time.Millisecond).Should(Equal("managed\n"), "tamper %d repaired", i)
			lat = append(lat, time.Since(start))
			// Past the flap window, so each tamper is a first one.
			time.Sleep(2*time.Second + 100*time.Millisecond)
		}
		slices.Sort(lat)
		var parts []string
		for _, q := range []float64{0.5, 0.9, 0.99} {
			i := min(int(q*float64(len(lat))), len(lat)-1)
			parts = append(parts, fmt.Sprintf("p%.0f %s", q*100, lat[i].Round(time.Millisecond)))
		}
		AddReportEntry("repair latency", strings.Join(parts, ", ")+fmt.Sprintf(", min %s, max %s", lat[0].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond)))
		GinkgoWriter.Printf("repair latency over %d tampers: %s, min %s, max %s\n", len(lat), strings.Join(parts, ", "), lat[0].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
		if tampers < 100 {
			return
		}
		fmt.Fprintf(os.Stderr, "REPAIR LATENCY over %d tampers: %s, min %s, max %s\n", len(lat), strings.Join(parts, ", "), lat[0].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	})
})
