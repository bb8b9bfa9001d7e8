package scaffoldchoria_test

import (
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/scaffoldchoria"
	"github.com/ccm-fleet/ccm/resources/scaffoldtype"
	"github.com/ccm-fleet/ccm/resources/templates"
)

var _ = Describe("CCM's variable names in scaffold templates", func() {
	DescribeTable("Facts and Data, and gopsutil's Go names below the gathered facts",
		func(engine, tmpl string) {
			source := filepath.Join(GinkgoT().TempDir(), "src")
			target := filepath.Join(GinkgoT().TempDir(), "etc", "app")
			writeTree(source, map[string]string{"host.conf": tmpl})
			env := templates.New(map[string]any{"host": map[string]any{"info": map[string]any{"hostname": "web01"}}}, map[string]any{"port": 8080})
			_, err := scaffoldchoria.New(nil).Scaffold(context.Background(), env, newProps(target, source, engine), false)
			Expect(err).NotTo(HaveOccurred())
			Expect(os.ReadFile(filepath.Join(target, "host.conf"))).To(Equal([]byte("web01 web01 web01 8080")))
		},
		Entry("jet", scaffoldtype.EngineJet, "[[ facts.host.info.Hostname ]] [[ Facts.host.info.Hostname ]] [[ Facts.host.info.hostname ]] [[ Data.port ]]"),
		Entry("go", scaffoldtype.EngineGo, "{{ .facts.host.info.Hostname }} {{ .Facts.host.info.Hostname }} {{ .Facts.host.info.hostname }} {{ .Data.port }}"),
	)
})
