package agent

import (
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

// watchAgent is an insecure agent "watch-1" on a broker of its own, with
// its state below dir.
func watchAgent(dir string, opts ...Option) *Agent {
	GinkgoHelper()
	b := brokertest.Start(GinkgoT())
	nc, err := nats.Connect(b.ClientURL())
	Expect(err).ToNot(HaveOccurred())
	DeferCleanup(nc.Close)
	reg, err := providers.Builtin(providers.Options{})
	Expect(err).ToNot(HaveOccurred())
	a, err := New(Config{Identity: "watch-1", StateDir: filepath.Join(dir, "state"), Insecure: true}, nc, engine.New(reg), nil, opts...)
	Expect(err).ToNot(HaveOccurred())
	return a
}

var _ = Describe("starting a watch after a run", func() {
	var (
		s    *assigner
		path string
	)
	BeforeEach(func() {
		dir := GinkgoT().TempDir()
		path = filepath.Join(dir, "motd")
		s = newAssigner(watchAgent(dir))
		DeferCleanup(func() {
			if s.w != nil {
				s.w.close()
			}
		})
	})

	// runOf is a run's reply that wrote content with mode 0644 to path.
	runOf := func(content string) *protocol.FleetReply {
		ev := protocol.NewTransactionEvent("e1", protocol.TypeFile, path, "")
		ev.Properties = map[string]any{"name": path, "watch": true}
		ev.Status = &protocol.FileState{CommonState: protocol.CommonState{Ensure: filetype.EnsurePresent},
			Metadata: &protocol.FileMetadata{Name: path, Mode: "0644", Size: int64(len(content)), Checksum: filetype.ChecksumBytes([]byte(content))}}
		r := protocol.NewFleetReply("r1", "watch-1", ev.Timestamp)
		r.Events = append(r.Events, ev)
		return r
	}

	It("takes the file as the run left it when it is", func() {
		Expect(os.WriteFile(path, []byte("managed\n"), 0o644)).To(Succeed())
		as := &assigned{name: "motd", selected: true}
		s.known[as.name] = as
		s.rewatch(as, runOf("managed\n"), []string{path}, nil)
		Expect(as.watch.paths).To(HaveKey(path))
		Expect(as.trigger).To(BeEmpty(), "nothing to repair")
	})

	DescribeTable("repairs a change made between the run's write and the watch's start",
		func(tamper func()) {
			Expect(os.WriteFile(path, []byte("managed\n"), 0o644)).To(Succeed())
			tamper()
			as := &assigned{name: "motd", selected: true}
			s.known[as.name] = as
			s.rewatch(as, runOf("managed\n"), []string{path}, nil)
			Expect(as.trigger).To(Equal(protocol.TriggerWatch))
			Expect(as.next).NotTo(BeZero())
		},
		Entry("other content of the same size", func() { Expect(os.WriteFile(path, []byte("tampere\n"), 0o644)).To(Succeed()) }),
		Entry("another size", func() { Expect(os.WriteFile(path, []byte("tampered\n"), 0o644)).To(Succeed()) }),
		Entry("another mode", func() { Expect(os.Chmod(path, 0o600)).To(Succeed()) }),
		Entry("removed", func() { Expect(os.Remove(path)).To(Succeed()) }),
	)

	// The run read its write back after the change: its reported state is
	// the tampered file, so only the declaration tells it is not the run's.
	declared := map[string]fileWant{}
	DescribeTable("judges the file against what the resource declares, not against what the run read back",
		func(tamper func(), repair bool) {
			content := "managed\n"
			declared[path] = fileWant{checksum: filetype.ChecksumBytes([]byte(content)), size: int64(len(content)), perm: 0o644, hasPerm: true}
			Expect(os.WriteFile(path, []byte(content), 0o644)).To(Succeed())
			tamper()
			b, err := os.ReadFile(path)
			if err != nil {
				b = nil
			}
			as := &assigned{name: "motd", selected: true}
			s.known[as.name] = as
			s.rewatch(as, runOf(string(b)), []string{path}, declared)
			if repair {
				Expect(as.trigger).To(Equal(protocol.TriggerWatch))
			} else {
				Expect(as.trigger).To(BeEmpty(), "the file is as declared")
			}
		},
		Entry("changed before the read-back", func() { Expect(os.WriteFile(path, []byte("tampered\n"), 0o644)).To(Succeed()) }, true),
		Entry("chmod before the read-back", func() { Expect(os.Chmod(path, 0o600)).To(Succeed()) }, true),
		Entry("left as declared", func() {}, false),
	)

	// A change between the run's write and its read-back fails the
	// resource (desired state not reached), and a failed resource's event
	// carries no state: only the declaration can tell.
	DescribeTable("judges a failed resource's file against what it declares",
		func(tamper func(), repair bool) {
			content := "managed\n"
			declared := map[string]fileWant{path: {checksum: filetype.ChecksumBytes([]byte(content)), size: int64(len(content)), perm: 0o644, hasPerm: true}}
			Expect(os.WriteFile(path, []byte(content), 0o644)).To(Succeed())
			tamper()
			reply := runOf(content)
			ev := reply.Events[0]
			ev.Failed, ev.Changed, ev.Status = true, true, nil
			ev.Errors = []string{"file " + path + ": desired state not achieved: content differs"}
			as := &assigned{name: "motd", selected: true}
			s.known[as.name] = as
			s.rewatch(as, reply, []string{path}, declared)
			Expect(as.watch.paths).To(HaveKey(path), "a failed resource stays watched")
			if repair {
				Expect(as.trigger).To(Equal(protocol.TriggerWatch))
				Expect(as.next).NotTo(BeZero())
			} else {
				Expect(as.trigger).To(BeEmpty(), "the file is as declared: nothing to repair")
			}
		},
		Entry("changed before the read-back", func() { Expect(os.WriteFile(path, []byte("tampered\n"), 0o644)).To(Succeed()) }, true),
		Entry("removed before the read-back", func() { Expect(os.Remove(path)).To(Succeed()) }, true),
		Entry("left as declared", func() {}, false),
	)
})

var _ = Describe("backing off a file that keeps changing", func() {
	It("counts a repair as flapping by the time since the previous one finished, however long repairs take", func() {
		dir := GinkgoT().TempDir()
		clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		s := newAssigner(watchAgent(dir, WithClock(func() time.Time { return clock })))
		as := &assigned{name: "motd", selected: true, watch: &watchState{}}
		changed := protocol.NewFleetReply("r1", "watch-1", clock)
		ev := protocol.NewTransactionEvent("e1", protocol.TypeFile, "/x", "")
		ev.Changed = true
		changed.Events = append(changed.Events, ev)

		// Each repair takes 3 s (a slow disk), and the next starts 250 ms
		// plus the backoff after the previous one finished.
		var got []string
		for range 4 {
			started := clock
			clock = clock.Add(3 * time.Second)
			got = append(got, s.repaired(as, started, changed, nil))
			clock = clock.Add(WatchDebounce + as.watch.backoff)
		}
		Expect(got).To(Equal([]string{"", "500ms", "1s", "2s"}))

		// A file left alone for longer than the window starts again.
		clock = clock.Add(time.Minute)
		Expect(s.repaired(as, clock, changed, nil)).To(BeEmpty())
	})
})
