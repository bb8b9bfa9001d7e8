package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/fileposix"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/catalog"
)

// racingFile is the posix file provider with someone else writing the file
// once, right after the provider's own write of it: before the run reads
// the file back to check its desired state.
type racingFile struct {
	*fileposix.Provider
	race *fileRace
}

// fileRace is the other writer: it writes tamper to path after the
// provider's first write of it, and closes done.
type fileRace struct {
	path, tamper string
	once         sync.Once
	done         chan struct{}
}

func (r *racingFile) Store(ctx context.Context, name string, contents []byte, source string, owner, group, mode string) error {
	if err := r.Provider.Store(ctx, name, contents, source, owner, group, mode); err != nil {
		return err
	}
	if name == r.race.path {
		r.race.once.Do(func() {
			Expect(os.WriteFile(name, []byte(r.race.tamper), 0o644)).To(Succeed())
			close(r.race.done)
		})
	}
	return nil
}

// racingFactory makes racingFile providers.
type racingFactory struct {
	*fileposix.Factory
	race *fileRace
}

func (f racingFactory) New() (resources.Provider, error) {
	p, err := f.Factory.New()
	if err != nil {
		return nil, err
	}
	return &racingFile{Provider: p.(*fileposix.Provider), race: f.race}, nil
}

// racingRegistry holds every resource type and, for files, the racing
// provider only (the manifests here declare files only).
func racingRegistry(race *fileRace) *resources.Registry {
	GinkgoHelper()
	reg := resources.NewRegistry()
	for _, t := range catalog.Types() {
		Expect(reg.RegisterType(t)).To(Succeed())
	}
	Expect(reg.RegisterProvider(racingFactory{Factory: fileposix.NewFactory(nil), race: race})).To(Succeed())
	return reg
}

var _ = Describe("A watched file changed between the run's write and its read-back", func() {
	It("is repaired by the watch, though the run that wrote it failed its desired-state check", func() {
		dir := GinkgoT().TempDir()
		target := filepath.Join(dir, "target")
		Expect(os.Mkdir(target, 0o755)).To(Succeed())
		file := filepath.Join(target, "motd")
		ops := newForwardKey()
		policy := writeOpsPolicy(dir, ops)
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err := jetstream.New(nc)
		Expect(err).ToNot(HaveOccurred())
		_, err = jsstore.EnsureHistory(context.Background(), js, jsstore.HistoryConfig{})
		Expect(err).ToNot(HaveOccurred())
		kv, err := jsstore.EnsureAssignments(context.Background(), js, jsstore.AssignmentsConfig{})
		Expect(err).ToNot(HaveOccurred())

		race := &fileRace{path: file, tamper: "tampered\n", done: make(chan struct{})}
		fa := &forwardAgent{b: b, facts: map[string]any{"os": "debian"}, reg: racingRegistry(race),
			cfg: agent.Config{Identity: "race-1", StateDir: filepath.Join(dir, "state"), Policy: policy, HistoryRetry: 100 * time.Millisecond, ShutdownTimeout: 10 * time.Second}}
		fa.start()

		// Scheduled hourly: only the watch can repair it within the spec.
		manifest := fmt.Sprintf(`{"manifest":{"ccm":{"resources":[{"file":[{%q:{"content":"managed\n","owner":"root","group":"root","mode":"0644","watch":true}}]}]}}}`, file)
		value, err := protocol.SignAssignment(&protocol.Assignment{Protocol: protocol.AssignmentProtocol, Name: "motd", Created: time.Now().UTC(),
			Interval: protocol.Duration(time.Hour), Manifest: json.RawMessage(manifest)}, ops.kp)
		Expect(err).ToNot(HaveOccurred())
		_, err = kv.Put(context.Background(), "motd", value)
		Expect(err).ToNot(HaveOccurred())

		Eventually(race.done).WithTimeout(20 * time.Second).Should(BeClosed())
		// runs are the assignment's recorded runs, in order: why each ran
		// and whether its file resource failed.
		type run struct {
			trigger string
			failed  bool
		}
		runs := func() []run {
			var out []run
			Expect(jsstore.Read(context.Background(), js, jsstore.ReadOptions{Filter: protocol.HistorySubjects}, func(r jsstore.Record) error {
				if r.Identity != "race-1" || r.Header.Get(protocol.HeaderAssignment) != "motd" {
					return nil
				}
				var reply protocol.FleetReply
				Expect(json.Unmarshal(r.Data, &reply)).To(Succeed(), string(r.Data))
				Expect(reply.Events).To(HaveLen(1), string(r.Data))
				out = append(out, run{trigger: r.Header.Get(protocol.HeaderTrigger), failed: reply.Events[0].Failed})
				return nil
			})).To(Succeed())
			return out
		}
		// The first run read the tampered file back: it failed.
		Eventually(runs).WithTimeout(20 * time.Second).ShouldNot(BeEmpty())
		Expect(runs()[0]).To(Equal(run{trigger: protocol.TriggerChange, failed: true}), "the run read the tampered file back")

		content := func() string { b, _ := os.ReadFile(file); return string(b) }
		Eventually(content).WithTimeout(30*time.Second).Should(Equal("managed\n"), "the watch repairs what the run found changed")
		Eventually(runs).WithTimeout(20 * time.Second).Should(Equal([]run{
			{trigger: protocol.TriggerChange, failed: true},
			{trigger: protocol.TriggerWatch, failed: false},
		}))
	})
})
