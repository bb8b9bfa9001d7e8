package accounts_test

import (
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/internal/accountns"
)

// TestMain runs the specs in a private mount namespace over throw-away
// overlays (accountns): what ccm-agent changes here stays here.
func TestMain(m *testing.M) { os.Exit(accountns.Main(m.Run)) }

func TestAccounts(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	RunSpecs(t, "Accounts Integration Suite")
}

var orchBin, agentBin string

var _ = BeforeSuite(func() {
	Expect(accountns.Inside()).To(BeTrue())
	var err error
	orchBin, err = gexec.Build("github.com/ccm-fleet/ccm/cmd/ccm-orch")
	Expect(err).NotTo(HaveOccurred())
	agentBin, err = gexec.Build("github.com/ccm-fleet/ccm/cmd/ccm-agent")
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() { gexec.CleanupBuildArtifacts() })
