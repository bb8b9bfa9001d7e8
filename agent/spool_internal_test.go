package agent

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the history spool's directory", func() {
	It("is made private by the first record, and made again when removed while the agent runs", func() {
		dir := filepath.Join(GinkgoT().TempDir(), "state", SpoolDirName)
		s := newSpool(dir, 10, 1<<20)
		for i := range 2 {
			Expect(os.RemoveAll(dir)).To(Succeed())
			_, err := s.add(spoolEntry{Subject: "ccm.v1.history.r.web-1", MsgID: "r/web-1", Data: []byte("{}")})
			Expect(err).ToNot(HaveOccurred(), "record %d", i)
			st, err := os.Stat(dir)
			Expect(err).ToNot(HaveOccurred())
			Expect(st.Mode().Perm()).To(Equal(os.FileMode(0o700)))
			names, err := filepath.Glob(filepath.Join(dir, "*"+spoolExt))
			Expect(err).ToNot(HaveOccurred())
			Expect(names).To(HaveLen(1), "record %d is on disk", i)
		}
	})
})
