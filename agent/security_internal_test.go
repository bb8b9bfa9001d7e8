package agent

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("replayCache", func() {
	var (
		path string
		now  time.Time
	)
	BeforeEach(func() {
		path = filepath.Join(GinkgoT().TempDir(), "state", ReplayFileName)
		now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	})

	open := func(maxEntries int, maxBytes int64, at time.Time) *replayCache {
		c, err := openReplayCache(path, maxEntries, maxBytes, at)
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(c.close)
		return c
	}

	It("remembers an id until it expires, with its first reply", func() {
		c := open(10, 1<<20, now)
		_, dup, err := c.add("r1", now.Add(time.Minute), now)
		Expect(err).ToNot(HaveOccurred())
		Expect(dup).To(BeFalse())
		Expect(c.finish("r1", []byte(`{"first":true}`), false)).To(Succeed())

		first, dup, err := c.add("r1", now.Add(time.Minute), now.Add(30*time.Second))
		Expect(err).ToNot(HaveOccurred())
		Expect(dup).To(BeTrue())
		Expect(string(first.Reply)).To(Equal(`{"first":true}`))
		Expect(first.Seen).To(Equal(now))

		_, dup, err = c.add("r1", now.Add(3*time.Minute), now.Add(2*time.Minute))
		Expect(err).ToNot(HaveOccurred())
		Expect(dup).To(BeFalse(), "an expired entry no longer counts")
	})

	It("survives a restart, dropping expired entries; the file is 0600", func() {
		c := open(10, 1<<20, now)
		_, _, err := c.add("long", now.Add(time.Hour), now)
		Expect(err).ToNot(HaveOccurred())
		Expect(c.finish("long", []byte(`{"events":[]}`), false)).To(Succeed())
		_, _, err = c.add("short", now.Add(time.Second), now)
		Expect(err).ToNot(HaveOccurred())
		_, _, err = c.add("ignored", now.Add(time.Hour), now)
		Expect(err).ToNot(HaveOccurred())
		Expect(c.finish("ignored", nil, true)).To(Succeed())
		Expect(c.close()).To(Succeed())
		fi, err := os.Stat(path)
		Expect(err).ToNot(HaveOccurred())
		Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o600)))

		later := now.Add(time.Minute)
		c2 := open(10, 1<<20, later)
		Expect(c2.len()).To(Equal(2))
		first, dup, err := c2.add("long", later.Add(time.Hour), later)
		Expect(err).ToNot(HaveOccurred())
		Expect(dup).To(BeTrue())
		Expect(string(first.Reply)).To(Equal(`{"events":[]}`))
		first, dup, _ = c2.add("ignored", later.Add(time.Hour), later)
		Expect(dup).To(BeTrue())
		Expect(first.Ignored).To(BeTrue())
		_, dup, _ = c2.add("short", later.Add(time.Hour), later)
		Expect(dup).To(BeFalse())
	})

	It("skips unreadable lines of a damaged file", func() {
		Expect(os.MkdirAll(filepath.Dir(path), 0o700)).To(Succeed())
		good, _ := json.Marshal(replayEntry{ID: "ok", Expires: now.Add(time.Hour), Seen: now})
		Expect(os.WriteFile(path, []byte("garbage\n"+string(good)+"\n{\"id\":\n"), 0o600)).To(Succeed())
		c := open(10, 1<<20, now)
		Expect(c.len()).To(Equal(1))
	})

	It("refuses new ids when full of unexpired ones, and takes them again once some expire", func() {
		c := open(3, 1<<20, now)
		for i := range 3 {
			_, _, err := c.add(fmt.Sprintf("r%d", i), now.Add(time.Duration(i+1)*time.Minute), now)
			Expect(err).ToNot(HaveOccurred())
		}
		_, _, err := c.add("r3", now.Add(time.Hour), now)
		Expect(err).To(MatchError(ErrReplayFull))
		_, _, err = c.add("r3", now.Add(time.Hour), now.Add(90*time.Second))
		Expect(err).ToNot(HaveOccurred())
	})

	It("bounds the bytes it keeps: a large first reply is not kept, a full cache refuses", func() {
		c := open(100, 2000, now)
		_, _, err := c.add("big", now.Add(time.Hour), now)
		Expect(err).ToNot(HaveOccurred())
		Expect(c.finish("big", []byte(strings.Repeat("x", MaxReplayReplyBytes+1)), false)).To(Succeed())
		first, dup, _ := c.add("big", now.Add(time.Hour), now)
		Expect(dup).To(BeTrue())
		Expect(first.Reply).To(BeEmpty())
		var err2 error
		for i := 0; i < 100 && err2 == nil; i++ {
			_, _, err2 = c.add(fmt.Sprintf("id-%03d-%s", i, strings.Repeat("y", 100)), now.Add(time.Hour), now)
		}
		Expect(err2).To(MatchError(ErrReplayFull))
	})

	It("reads back, once, the requests it never saw answered: an agent stopped on them", func() {
		c := open(10, 1<<20, now)
		for _, id := range []string{"answered", "ignored", "running", "expired-running", "big"} {
			expires := now.Add(time.Hour)
			if id == "expired-running" {
				expires = now.Add(30 * time.Second)
			}
			_, _, err := c.add(id, expires, now)
			Expect(err).ToNot(HaveOccurred())
		}
		Expect(c.finish("answered", []byte(`{"events":[]}`), false)).To(Succeed())
		Expect(c.finish("ignored", nil, true)).To(Succeed())
		Expect(c.finish("big", []byte(strings.Repeat("x", MaxReplayReplyBytes+1)), false)).To(Succeed())
		Expect(c.takeInterrupted()).To(BeEmpty(), "nothing was interrupted in this run")
		Expect(c.close()).To(Succeed())

		c2 := open(10, 1<<20, now.Add(time.Minute))
		var ids []string
		for _, e := range c2.takeInterrupted() {
			ids = append(ids, e.ID)
		}
		Expect(ids).To(ConsistOf("running", "expired-running"), "expired or not; an answer too large to keep is still an answer")
		Expect(c2.takeInterrupted()).To(BeEmpty(), "handed out once")
		Expect(c2.finish("running", []byte(`{"error":{"code":"interrupted"}}`), false)).To(Succeed())
		Expect(c2.close()).To(Succeed())

		c3 := open(10, 1<<20, now.Add(2*time.Minute))
		Expect(c3.takeInterrupted()).To(BeEmpty(), "once answered, a restart does not report it again")
	})

	It("compacts its file to the live entries", func() {
		c := open(100000, 64<<20, now)
		reply := []byte(`{"r":"` + strings.Repeat("z", 2000) + `"}`)
		for i := range 1500 {
			id := fmt.Sprintf("r%d", i)
			_, _, err := c.add(id, now.Add(time.Second), now)
			Expect(err).ToNot(HaveOccurred())
			Expect(c.finish(id, reply, false)).To(Succeed())
		}
		later := now.Add(time.Minute)
		for i := range 1100 {
			_, _, err := c.add(fmt.Sprintf("s%d", i), later.Add(time.Hour), later)
			Expect(err).ToNot(HaveOccurred())
		}
		fi, err := os.Stat(path)
		Expect(err).ToNot(HaveOccurred())
		Expect(fi.Size()).To(BeNumerically("<", 1500*2000), "the expired replies were dropped from the file")
		Expect(c.close()).To(Succeed())
		c2 := open(100000, 64<<20, later)
		Expect(c2.len()).To(Equal(1100))
	})
})

var _ = Describe("auditLog", func() {
	It("appends one JSON line per record to a 0600 file", func() {
		path := filepath.Join(GinkgoT().TempDir(), "logs", "audit.log")
		l, err := openAuditLog(path)
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(l.close)
		Expect(l.write(&AuditRecord{RequestID: "r1", Decision: DecisionAccepted, Resources: []string{"file#/x"}, Signer: AuditSigner{Name: "ops", Key: "UKEY"}})).To(Succeed())
		Expect(l.write(&AuditRecord{RequestID: "r2", Decision: "forbidden", Message: "no", Result: &AuditResult{Error: protocol.NewError(protocol.CodeForbidden, "no")}})).To(Succeed())
		fi, err := os.Stat(path)
		Expect(err).ToNot(HaveOccurred())
		Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o600)))
		lines := readLines(path)
		Expect(lines).To(HaveLen(2))
		var rec map[string]any
		Expect(json.Unmarshal([]byte(lines[0]), &rec)).To(Succeed())
		Expect(rec).To(HaveKeyWithValue("request_id", "r1"))
		Expect(rec).To(HaveKeyWithValue("signer", map[string]any{"name": "ops", "key": "UKEY"}))
		Expect(rec).To(HaveKeyWithValue("resources", []any{"file#/x"}))
		Expect(json.Unmarshal([]byte(lines[1]), &rec)).To(Succeed())
		Expect(rec).To(HaveKeyWithValue("decision", "forbidden"))
	})

	It("restricts an existing file to 0600", func() {
		path := filepath.Join(GinkgoT().TempDir(), "audit.log")
		Expect(os.WriteFile(path, nil, 0o644)).To(Succeed())
		l, err := openAuditLog(path)
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(l.close)
		fi, _ := os.Stat(path)
		Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o600)))
	})

	It("bounds a line", func() {
		path := filepath.Join(GinkgoT().TempDir(), "audit.log")
		l, err := openAuditLog(path)
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(l.close)
		refs := make([]string, 5000)
		for i := range refs {
			refs[i] = "file#/" + strings.Repeat("p", 1000)
		}
		Expect(l.write(&AuditRecord{RequestID: strings.Repeat("i", 5000), Resources: refs, Message: strings.Repeat("m", 100000), Decision: "bad_request"})).To(Succeed())
		lines := readLines(path)
		Expect(lines).To(HaveLen(1))
		Expect(len(lines[0])).To(BeNumerically("<", MaxAuditLine))
		Expect(json.Valid([]byte(lines[0]))).To(BeTrue())
		Expect(refs[0]).To(HaveLen(1006), "the caller's list is not changed")
	})

	It("reports a write that fails", func() {
		if _, err := os.Stat("/dev/full"); err != nil {
			Fail("this test needs /dev/full")
		}
		l, err := openAuditLog("/dev/full")
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(l.close)
		Expect(l.write(&AuditRecord{RequestID: "r1", Decision: DecisionAccepted})).To(MatchError(ErrAudit))
	})

	It("cannot open a path that is a directory", func() {
		_, err := openAuditLog(GinkgoT().TempDir())
		Expect(err).To(MatchError(ErrAudit))
	})
})

func readLines(path string) []string {
	f, err := os.Open(path)
	Expect(err).ToNot(HaveOccurred())
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

var _ = Describe("replayCache replies kept in the file", func() {
	It("holds no reply in memory, reads it back for a duplicate, also after the file is rewritten", func() {
		path := filepath.Join(GinkgoT().TempDir(), ReplayFileName)
		now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		c, err := openReplayCache(path, 100, 1<<20, now)
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(c.close)
		reply := func(i int) string { return fmt.Sprintf(`{"n":%d,"pad":%q}`, i, strings.Repeat("z", i)) }
		for i := range 20 {
			id := fmt.Sprintf("r%02d", i)
			_, _, err := c.add(id, now.Add(time.Hour), now)
			Expect(err).ToNot(HaveOccurred())
			if i%5 != 4 {
				Expect(c.finish(id, []byte(reply(i)), false)).To(Succeed())
			}
		}
		c.mu.Lock()
		for _, e := range c.entries {
			Expect(e.Reply).To(BeNil(), "entry %s keeps its reply in memory", e.ID)
		}
		c.mu.Unlock()
		check := func() {
			for i := range 20 {
				first, dup, err := c.add(fmt.Sprintf("r%02d", i), now.Add(time.Hour), now)
				Expect(err).ToNot(HaveOccurred())
				Expect(dup).To(BeTrue())
				if i%5 == 4 {
					Expect(first.Reply).To(BeEmpty(), "r%02d was never answered", i)
				} else {
					Expect(string(first.Reply)).To(Equal(reply(i)))
				}
			}
		}
		check()
		c.mu.Lock()
		before := c.fileBytes
		Expect(c.rewriteLocked()).To(Succeed())
		after := c.fileBytes
		c.mu.Unlock()
		Expect(after).To(BeNumerically("<", before), "the rewrite keeps one line per id")
		check()
		// Appending after the rewrite keeps offsets right.
		_, _, err = c.add("late", now.Add(time.Hour), now)
		Expect(err).ToNot(HaveOccurred())
		Expect(c.finish("late", []byte(`{"late":true}`), false)).To(Succeed())
		first, dup, _ := c.add("late", now.Add(time.Hour), now)
		Expect(dup).To(BeTrue())
		Expect(string(first.Reply)).To(Equal(`{"late":true}`))
		check()
	})

	It("answers 'not known' rather than another request's reply when the file was damaged", func() {
		path := filepath.Join(GinkgoT().TempDir(), ReplayFileName)
		now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		c, err := openReplayCache(path, 100, 1<<20, now)
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(c.close)
		_, _, err = c.add("a", now.Add(time.Hour), now)
		Expect(err).ToNot(HaveOccurred())
		Expect(c.finish("a", []byte(`{"a":1}`), false)).To(Succeed())
		Expect(os.Truncate(path, 10)).To(Succeed())
		first, dup, err := c.add("a", now.Add(time.Hour), now)
		Expect(err).ToNot(HaveOccurred())
		Expect(dup).To(BeTrue())
		Expect(first.Reply).To(BeEmpty())
	})
})
