package auditlog_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/auditlog"
)

func TestAuditlog(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Auditlog Suite")
}

var _ = Describe("File", func() {
	It("makes its directory 0700 and the log 0600 at the first line, and appends one JSON line per record", func() {
		path := filepath.Join(GinkgoT().TempDir(), "new", "audit.log")
		f := auditlog.New(path)
		Expect(path).ToNot(BeAnExistingFile(), "opened at the first line only")
		Expect(f.Write(&auditlog.Record{RequestID: "r1", Decision: "accepted"})).To(Succeed())
		Expect(f.Write(&auditlog.Record{RequestID: "r2", Decision: "forbidden", Rule: "file.paths"})).To(Succeed())
		Expect(f.Close()).To(Succeed())
		fi, err := os.Stat(path)
		Expect(err).ToNot(HaveOccurred())
		Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o600)))
		di, err := os.Stat(filepath.Dir(path))
		Expect(err).ToNot(HaveOccurred())
		Expect(di.Mode().Perm()).To(Equal(os.FileMode(0o700)))
		b, err := os.ReadFile(path)
		Expect(err).ToNot(HaveOccurred())
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		Expect(lines).To(HaveLen(2))
		var r auditlog.Record
		Expect(json.Unmarshal([]byte(lines[1]), &r)).To(Succeed())
		Expect(r.RequestID).To(Equal("r2"))
		Expect(r.Rule).To(Equal("file.paths"))
		Expect(r.Resources).ToNot(BeNil(), "resources is a list, never null")
	})

	It("says the log is unavailable when it cannot be opened", func() {
		_, err := auditlog.Open(GinkgoT().TempDir())
		Expect(err).To(MatchError(auditlog.ErrUnavailable))
	})
})

var _ = Describe("Encode", func() {
	It("keeps a line under MaxLine, cutting strings, then resources, then the message", func() {
		many := make([]string, 500)
		for i := range many {
			many[i] = strings.Repeat("r", 600)
		}
		b, err := auditlog.Encode(&auditlog.Record{RequestID: strings.Repeat("i", 2000), Message: strings.Repeat("m", 600), Resources: many})
		Expect(err).ToNot(HaveOccurred())
		Expect(len(b)).To(BeNumerically("<", auditlog.MaxLine))
		Expect(b).To(HaveSuffix("\n"))
		var r auditlog.Record
		Expect(json.Unmarshal(b, &r)).To(Succeed())
		Expect(r.RequestID).To(HaveLen(512 + 3))
		Expect(r.Resources[len(r.Resources)-1]).To(Equal("... cut"))
	})
})
