package resflags_test

import (
	"github.com/choria-io/fisk"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/cmd/internal/resflags"
)

// parse registers typ's flags on a fresh command and parses args after
// "ensure TYPE".
func parse(typ string, args ...string) (map[string]any, error) {
	app := fisk.New("t", "")
	t, ok := resflags.Lookup(typ)
	Expect(ok).To(BeTrue(), typ)
	cmd := app.Command("ensure", "").Command(typ, "")
	var c resflags.Common
	c.Register(cmd, t)
	v := resflags.Register(cmd, t)
	_, err := app.Parse(append([]string{"ensure", typ}, args...))
	Expect(err).NotTo(HaveOccurred())
	props, err := v.Properties()
	Expect(err).NotTo(HaveOccurred())
	return c.Properties(props)
}

var _ = DescribeTable("reads CCM's positional arguments from the catalog",
	func(typ string, args []string, want map[string]any) {
		props, err := parse(typ, args...)
		Expect(err).NotTo(HaveOccurred())
		for k, v := range want {
			Expect(props).To(HaveKeyWithValue(k, v))
		}
		if _, ok := want["ensure"]; !ok {
			Expect(props).NotTo(HaveKey("ensure"))
		}
	},
	Entry("an archive's URL", "archive", []string{"/tmp/a.tgz", "https://example.net/a.tgz"}, map[string]any{"url": "https://example.net/a.tgz"}),
	Entry("an archive's ensure value", "archive", []string{"/tmp/a.tgz", "present"}, map[string]any{"ensure": "present"}),
	Entry("a scaffold's source then ensure", "scaffold", []string{"/srv/app", "/srv/tmpl", "absent"}, map[string]any{"source": "/srv/tmpl", "ensure": "absent"}),
	Entry("a scaffold's ensure value", "scaffold", []string{"/srv/app", "present"}, map[string]any{"ensure": "present"}),
	Entry("a file's ensure value", "file", []string{"/tmp/x", "://present"}, map[string]any{"ensure": "://present"}),
)
