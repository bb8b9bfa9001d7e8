package agent

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

var _ = Describe("a watch that cannot be switched off", func() {
	var (
		s     *assigner
		dir   string
		path  string
		clock time.Time
	)
	BeforeEach(func() {
		dir = filepath.Join(GinkgoT().TempDir(), "etc")
		Expect(os.Mkdir(dir, 0o755)).To(Succeed())
		path = filepath.Join(dir, "motd")
		clock = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		s = newAssigner(watchAgent(GinkgoT().TempDir(), WithClock(func() time.Time { return clock })))
		DeferCleanup(func() {
			if s.w != nil {
				s.w.close()
			}
		})
	})

	// replyOf is a run's reply for the watched file at path: failed with
	// msg, or written with content.
	replyOf := func(content string, failed bool, msg string) *protocol.FleetReply {
		ev := protocol.NewTransactionEvent("e1", protocol.TypeFile, path, "")
		ev.Properties = map[string]any{"name": path, "watch": true}
		ev.Status = &protocol.FileState{CommonState: protocol.CommonState{Ensure: filetype.EnsurePresent},
			Metadata: &protocol.FileMetadata{Name: path, Mode: "0644", Size: int64(len(content)), Checksum: filetype.ChecksumBytes([]byte(content))}}
		ev.Failed, ev.Changed = failed, !failed
		if failed {
			ev.Errors = []string{msg}
		}
		r := protocol.NewFleetReply("r1", "watch-1", clock)
		r.Events = append(r.Events, ev)
		return r
	}

	watched := func() *assigned {
		GinkgoHelper()
		Expect(os.WriteFile(path, []byte("managed\n"), 0o644)).To(Succeed())
		as := &assigned{name: "motd", selected: true}
		s.known[as.name] = as
		s.rewatch(as, replyOf("managed\n", false, ""), []string{path}, nil)
		Expect(as.watch.paths).To(HaveKey(path))
		return as
	}

	It("keeps watching a file whose repair failed, tries the repair again after the backoff and counts the failure", func() {
		as := watched()
		as.trigger = protocol.TriggerWatch
		failed := replyOf("managed\n", true, "could not write /etc/motd:\nis a directory")
		Expect(s.repaired(as, clock, failed, nil)).To(Equal("500ms"))
		Expect(as.watch.failures).To(Equal(1))
		Expect(as.watch.lastError).To(Equal("file#" + path + ": could not write /etc/motd: is a directory"))
		Expect(as.watch.failedAt).To(Equal(clock))
		Expect(as.trigger).To(Equal(protocol.TriggerWatch))
		Expect(as.next).To(Equal(clock.Add(500 * time.Millisecond)))

		s.rewatch(as, failed, []string{path}, nil)
		Expect(as.watch.paths).To(HaveKey(path), "a failed repair does not end the watch")
		Expect(s.w.dirs).To(HaveKeyWithValue(dir, 1))

		// Failing again and again backs off up to the ceiling, never off.
		for range 20 {
			clock = clock.Add(time.Minute)
			s.repaired(as, clock, failed, nil)
		}
		Expect(as.watch.backoff).To(Equal(watchMaxBackoff))
		Expect(as.next).To(Equal(clock.Add(watchMaxBackoff)))
		Expect(as.watch.failures).To(Equal(21))
	})

	It("says nothing of a sensitive resource's failure but its name", func() {
		r := replyOf("x", true, "the secret is hunter2")
		Expect(runFailure(r, map[string]bool{"file#" + path: true})).To(Equal("file#" + path + ": failed"))
		Expect(runFailure(r, nil)).To(ContainSubstring("hunter2"), "the run did not prepare it as sensitive")
	})

	It("bounds the kept error", func() {
		r := replyOf("x", true, string(make([]byte, 4*maxWatchErrorBytes)))
		Expect(len(runFailure(r, nil))).To(BeNumerically("<=", maxWatchErrorBytes+3))
	})

	It("watches a directory again after the user removed and recreated it", func() {
		as := watched()
		Expect(s.w.armed).To(HaveKey(dir))
		Expect(os.RemoveAll(dir)).To(Succeed())
		Eventually(s.w.events()).Should(Receive(WithTransform(func(ev fsnotify.Event) bool { return s.w.lost(ev) }, BeTrue())))
		Expect(s.w.armed).ToNot(HaveKey(dir))
		Expect(os.Mkdir(dir, 0o755)).To(Succeed())
		Expect(os.WriteFile(path, []byte("tampered\n"), 0o644)).To(Succeed())
		s.poll()
		Expect(s.w.armed).To(HaveKey(dir), "the new directory is watched")
		Expect(as.trigger).To(Equal(protocol.TriggerWatch), "the check found the file changed")
		Expect(as.next).ToNot(BeZero())

		// Events in the new directory arrive again.
		as.next, as.trigger = time.Time{}, ""
		Expect(os.WriteFile(path, []byte("again\n"), 0o644)).To(Succeed())
		var ev fsnotify.Event
		Eventually(s.w.events()).Should(Receive(&ev))
		Expect(filepath.Dir(ev.Name)).To(Equal(dir))
	})

	It("checks the files themselves when inotify cannot be used, and watches again once it can", func() {
		as := watched()
		s.w.broken()
		Expect(s.w.events()).To(BeNil())
		Expect(os.WriteFile(path, []byte("tampered\n"), 0o644)).To(Succeed())
		as.next, as.trigger = time.Time{}, ""
		s.poll()
		Expect(as.trigger).To(Equal(protocol.TriggerWatch))
		Expect(s.w.events()).ToNot(BeNil(), "a new inotify watcher is made")
		Expect(s.w.armed).To(HaveKey(dir))
	})

	It("compares every watched file when inotify lost events (overflow)", func() {
		as := watched()
		Expect(os.WriteFile(path, []byte("tampered\n"), 0o644)).To(Succeed())
		as.next, as.trigger = time.Time{}, ""
		s.watcherFailed(fsnotify.ErrEventOverflow, false)
		Expect(as.trigger).To(Equal(protocol.TriggerWatch))
		Expect(as.next).ToNot(BeZero())
	})

	It("makes a new inotify watcher when the old one's channels close", func() {
		watched()
		old := s.w.fs
		Expect(old.Close()).To(Succeed())
		Eventually(func() bool { _, ok := <-old.Events; return ok }).Should(BeFalse())
		s.watcherFailed(errors.New("event channel closed"), true)
		Expect(s.w.fs).ToNot(BeNil())
		Expect(s.w.fs).ToNot(BeIdenticalTo(old))
		Expect(s.w.armed).To(HaveKey(dir))
		Expect(os.WriteFile(path, []byte("again\n"), 0o644)).To(Succeed())
		var ev fsnotify.Event
		Eventually(s.w.events()).Should(Receive(&ev))
		Expect(filepath.Dir(ev.Name)).To(Equal(dir))
	})
})
