package shadow_test

import (
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/internal/accountns"
)

// TestMain runs the specs in a private mount namespace with throw-away
// overlays of /etc, /home, /var/log and /var/mail (accountns), so the real
// useradd, usermod, chpasswd and groupadd change no account of the
// machine; afterwards it checks the machine's account files are
// byte-identical to before.
func TestMain(m *testing.M) { os.Exit(accountns.Main(m.Run)) }

func TestShadow(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Shadow (useradd, groupadd) Provider Suite")
}
