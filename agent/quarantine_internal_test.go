package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the assignment run journal (quarantine)", func() {
	var path string
	now := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	BeforeEach(func() { path = filepath.Join(GinkgoT().TempDir(), QuarantineFileName) })

	open := func() (*quarantine, []stopped) {
		GinkgoHelper()
		q, stops, err := openQuarantine(path, now)
		Expect(err).ToNot(HaveOccurred())
		return q, stops
	}

	It("quarantines a revision in flight at two consecutive stops, and only that value", func() {
		q, stops := open()
		Expect(stops).To(BeEmpty())
		_, err := q.begin("web", 3, "d3", "", now)
		Expect(err).ToNot(HaveOccurred())
		// The agent is killed here: the next start counts a stop.
		q, stops = open()
		Expect(stops).To(HaveLen(1))
		Expect(stops[0].quarantined).To(BeFalse())
		Expect(q.held("web", "d3")).To(BeNil())
		_, err = q.begin("web", 3, "d3", "", now.Add(time.Second))
		Expect(err).ToNot(HaveOccurred())
		q, stops = open()
		Expect(stops).To(HaveLen(1))
		Expect(stops[0].quarantined).To(BeTrue())
		Expect(q.held("web", "d3")).ToNot(BeNil())
		Expect(q.held("web", "d3").reason("web")).To(HavePrefix("the agent stopped 2 times while applying revision 3 of assignment web (runs started at 2026-11-29T01:00:00Z and 2026-11-29T01:00:01Z)"))
		Expect(q.held("web", "other")).To(BeNil(), "another value of the name is not quarantined")

		// A later start counts nothing more and keeps the quarantine.
		q, stops = open()
		Expect(stops).To(BeEmpty())
		Expect(q.held("web", "d3")).ToNot(BeNil())

		// A newer revision clears it.
		cleared, err := q.begin("web", 4, "d4", "", now)
		Expect(err).ToNot(HaveOccurred())
		Expect(cleared).ToNot(BeNil())
		Expect(cleared.Revision).To(Equal(uint64(3)))
		Expect(q.held("web", "d3")).To(BeNil())
		Expect(q.finish("web", "d4")).To(Succeed())
		q, stops = open()
		Expect(stops).To(BeEmpty())
		Expect(q.entries).To(BeEmpty())
	})

	It("counts only consecutive stops: a run that ends clears the count", func() {
		q, _ := open()
		_, err := q.begin("web", 3, "d3", "", now)
		Expect(err).ToNot(HaveOccurred())
		q, stops := open()
		Expect(stops).To(HaveLen(1))
		_, err = q.begin("web", 3, "d3", "", now)
		Expect(err).ToNot(HaveOccurred())
		Expect(q.finish("web", "d3")).To(Succeed())
		_, err = q.begin("web", 3, "d3", "", now)
		Expect(err).ToNot(HaveOccurred())
		q, stops = open()
		Expect(stops).To(HaveLen(1))
		Expect(stops[0].quarantined).To(BeFalse())
		Expect(q.held("web", "d3")).To(BeNil())
	})

	It("is bounded: the oldest entries make room", func() {
		q, _ := open()
		for i := range MaxQuarantineEntries + 5 {
			q.entries[fmt.Sprintf("a%d", i)] = &inflight{Revision: 1, Digest: "d", Started: now.Add(time.Duration(i) * time.Second)}
		}
		// Past the bound (written by hand): refused at load, moved aside.
		Expect(q.save()).To(Succeed())
		q2, _, err := openQuarantine(path, now)
		Expect(err).To(MatchError(ContainSubstring("the limit is 1024")))
		Expect(q2.entries).To(BeEmpty())
		Expect(path + ".bad").To(BeAnExistingFile())

		_, err = q.begin("new", 1, "dn", "", now.Add(time.Hour))
		Expect(err).ToNot(HaveOccurred())
		Expect(q.entries).To(HaveLen(MaxQuarantineEntries))
		Expect(q.entries).To(HaveKey("new"))
		Expect(q.entries).ToNot(HaveKey("a0"))
	})

	It("refuses to start a run it cannot journal, leaving what it held as it was", func() {
		q, _ := open()
		_, err := q.begin("web", 3, "d3", "", now)
		Expect(err).ToNot(HaveOccurred())
		q, _ = open()
		_, err = q.begin("web", 3, "d3", "", now)
		Expect(err).ToNot(HaveOccurred())
		q, _ = open()
		Expect(q.held("web", "d3")).ToNot(BeNil())
		q.path = filepath.Join(filepath.Dir(path), "gone", QuarantineFileName)
		_, err = q.begin("web", 4, "d4", "", now)
		Expect(err).To(MatchError(ContainSubstring("run journal")))
		Expect(q.held("web", "d3")).ToNot(BeNil(), "the quarantine stays when the newer revision could not be journaled")
		_, err = q.begin("db", 1, "d1", "", now)
		Expect(err).To(HaveOccurred())
		Expect(q.entries).ToNot(HaveKey("db"))
	})

	It("moves aside a journal that does not decode and goes on with an empty one", func() {
		Expect(os.WriteFile(path, []byte("{not json"), 0o600)).To(Succeed())
		q, _, err := openQuarantine(path, now)
		Expect(err).To(MatchError(ContainSubstring(path)))
		Expect(q).ToNot(BeNil())
		Expect(q.entries).To(BeEmpty())
		Expect(path + ".bad").To(BeAnExistingFile())
	})
})

var _ = Describe("the run journal's manifest sources", func() {
	It("keys a source by its name and version, and refuses a malformed source entry at load", func() {
		path := filepath.Join(GinkgoT().TempDir(), QuarantineFileName)
		now := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
		q, _, err := openQuarantine(path, now)
		Expect(err).ToNot(HaveOccurred())
		key := sourceKey("/etc/ccm/site.yaml")
		_, err = q.begin(key, 0, "v1", "", now)
		Expect(err).ToNot(HaveOccurred())
		q, _, err = openQuarantine(path, now)
		Expect(err).ToNot(HaveOccurred())
		_, err = q.begin(key, 0, "v1", "", now)
		Expect(err).ToNot(HaveOccurred())
		q, stops, err := openQuarantine(path, now)
		Expect(err).ToNot(HaveOccurred())
		Expect(stops).To(HaveLen(1))
		Expect(stops[0].quarantined).To(BeTrue())
		Expect(q.held(key, "v1").reason(key)).To(HavePrefix("the agent stopped 2 times while applying manifest source /etc/ccm/site.yaml (sha256 v1;"))
		Expect(q.held(key, "v2")).To(BeNil())

		Expect(os.WriteFile(path, []byte(`{"source:/a":{"revision":0,"digest":"d","source":"/b","started":"2026-11-29T01:00:00Z"}}`), 0o600)).To(Succeed())
		_, _, err = openQuarantine(path, now)
		Expect(err).To(MatchError(ContainSubstring("malformed entry")))
	})
})
