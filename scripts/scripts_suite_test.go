package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestScripts(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "scripts Suite")
}

// binDir holds ccm-broker, ccm-orch and ccm-agent built from this tree for
// the suite, handed to demo.sh as BIN.
var binDir string

var _ = BeforeSuite(func() {
	dir, err := os.MkdirTemp("", "ccm-scripts-bin-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, dir)
	for _, c := range []string{"ccm-broker", "ccm-orch", "ccm-agent"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, c), "github.com/ccm-fleet/ccm/cmd/"+c).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "go build %s: %s", c, out)
	}
	binDir = dir
})
