package manifest_test

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/providers/fileposix"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/providers/systemd"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/filetype"
	"github.com/ccm-fleet/ccm/resources/servicetype"
)

// systemctl is the exact argv the systemd provider runs for verb on unit.
func systemctl(verb, unit string) []string {
	return []string{"systemctl", verb, "--system", "--", unit}
}

// expectStatus scripts the is-active / is-enabled pair with captured output.
func expectStatus(f *runner.Fake, active string, activeExit int) {
	f.ExpectFile(systemctl("is-active", "nginx"), activeExit, "testdata/systemctl/is-active-"+active+".txt")
	f.ExpectFile(systemctl("is-enabled", "nginx"), 0, "testdata/systemctl/is-enabled-enabled.txt")
}

// expectStatusAgain scripts the status the service type reads after acting:
// the provider first asks whether the unit changed on disk since its reload.
func expectStatusAgain(f *runner.Fake, active string, activeExit int) {
	f.ExpectFile([]string{"systemctl", "show", "--system", "--property=NeedDaemonReload", "--", "nginx"}, 0, "testdata/systemctl/show-need-daemon-reload-no.txt")
	expectStatus(f, active, activeExit)
}

var _ = Describe("Run with a service subscribed to a file", func() {
	// This host has no systemd as init, so systemctl answers from captured
	// output through a fake runner; the file is real.
	const doc = `
data: {conf: "worker_processes 1;"}
ccm:
  resources:
    - file:
        - DIR/nginx.conf: {content: "{{ lookup('data.conf') }}", owner: root, group: root, mode: "0644"}
    - service:
        - nginx:
            ensure: running
            subscribe: ["file#DIR/nginx.conf"]
`
	var (
		dir  string
		fake *runner.Fake
		eng  *engine.Engine
	)

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		fake = &runner.Fake{}
		eng = serviceEngine(fake)
	})

	run := func(noop bool, conf string) *manifest.Report {
		GinkgoHelper()
		m, err := manifest.Parse([]byte(strings.ReplaceAll(doc, "DIR", dir)), manifest.ParseOptions{})
		Expect(err).ToNot(HaveOccurred())
		rep, err := manifest.Run(GinkgoT().Context(), eng, m, manifest.RunOptions{Noop: noop, Data: map[string]any{"conf": conf}})
		Expect(err).ToNot(HaveOccurred())
		return rep
	}

	It("restarts the running service when the file changed, and not when it is stable", func() {
		fake.Expect([]string{"systemctl", "daemon-reload"}, 0, "")
		expectStatus(fake, "active", 0)
		fake.Expect(systemctl("restart", "nginx"), 0, "")
		expectStatusAgain(fake, "active", 0)
		rep := run(false, "worker_processes 1;")
		Expect(fake.Verify()).To(Succeed())
		svc := rep.Events[1]
		Expect(svc.Errors).To(BeEmpty())
		Expect(svc.Changed).To(BeTrue())
		Expect(svc.Refreshed).To(BeTrue())

		By("a second run: the file is stable, so only the status is read")
		fake = &runner.Fake{}
		eng = serviceEngine(fake)
		fake.Expect([]string{"systemctl", "daemon-reload"}, 0, "")
		expectStatus(fake, "active", 0)
		rep = run(false, "worker_processes 1;")
		Expect(fake.Verify()).To(Succeed())
		Expect(rep.Events[1].Outcome()).To(Equal("stable"))
		Expect(rep.Summary.Refreshed).To(Equal(0))
	})

	It("under noop says it would restart, and runs nothing but the status", func() {
		Expect(os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte("old"), 0o644)).To(Succeed())
		fake.Expect([]string{"systemctl", "daemon-reload"}, 0, "")
		expectStatus(fake, "active", 0)
		rep := run(true, "new")
		Expect(fake.Verify()).To(Succeed())
		Expect(os.ReadFile(filepath.Join(dir, "nginx.conf"))).To(Equal([]byte("old")))
		svc := rep.Events[1]
		Expect(svc.Refreshed).To(BeTrue())
		Expect(svc.NoopMessage).To(Equal("Would have restarted (would refresh: file#" + dir + "/nginx.conf would change)"))
	})

	It("starts (not restarts) a stopped service whose file changed", func() {
		fake.Expect([]string{"systemctl", "daemon-reload"}, 0, "")
		expectStatus(fake, "inactive", 3)
		fake.ExpectFile([]string{"systemctl", "show", "--system", "--property=SubState", "--", "nginx"}, 0, "testdata/systemctl/show-substate-dead.txt")
		fake.Expect(systemctl("start", "nginx"), 0, "")
		expectStatusAgain(fake, "active", 0)
		rep := run(false, "x")
		Expect(fake.Verify()).To(Succeed())
		Expect(rep.Events[1].Changed).To(BeTrue())
		Expect(rep.Events[1].Refreshed).To(BeFalse())
	})
})

// serviceEngine applies files for real and services through systemd over fake.
func serviceEngine(fake *runner.Fake) *engine.Engine {
	GinkgoHelper()
	reg := resources.NewRegistry()
	Expect(reg.RegisterType(filetype.Type{})).To(Succeed())
	Expect(reg.RegisterType(servicetype.Type{})).To(Succeed())
	Expect(reg.RegisterProvider(fileposix.NewFactory(nil))).To(Succeed())
	lookPath := func(string) (string, error) { return "/usr/bin/systemctl", nil }
	Expect(reg.RegisterProvider(systemd.NewFactory(fake, nil, systemd.WithLookPath(lookPath)))).To(Succeed())
	return engine.New(reg)
}
