package archivehttp_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/internal/swaprace"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

func TestMain(m *testing.M) {
	swaprace.MaybeRunHelper()
	os.Exit(m.Run())
}

// tempName matches a download's temporary file (base + "-" + digits).
var tempName = regexp.MustCompile(`\.tar-[0-9]+$`)

var _ = Describe("a directory swapped for a link while archives are downloaded and extracted", func() {
	It("never writes into the link's target and leaves no temporary file", func() {
		if os.Geteuid() != 0 {
			Fail("LOUD: this race test needs root (it runs a helper as uid 65534 and writes as root); run it as root")
		}
		ctx := context.Background()
		sticky, cleanup, err := swaprace.SharedDir()
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(cleanup)
		goal := GinkgoT().TempDir()
		Expect(os.Chmod(goal, 0o700)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(goal, "shadow"), []byte("precious"), 0o600)).To(Succeed())

		data := build(".tar", dir("etc"), file("etc/app.conf", "x=1"), file("top", "t"))
		srv := newServer()
		url := srv.put("/app.tar", data)
		local := filepath.Join(GinkgoT().TempDir(), "app.tar")
		Expect(os.WriteFile(local, data, 0o600)).To(Succeed())
		prov, _ := newProvider()

		race, err := swaprace.Start(sticky, goal, 1500*time.Millisecond, 50_000_000)
		Expect(err).ToNot(HaveOccurred())
		var ok, refused, n int
		var others []error
		for ; n < 20_000 && !race.Done(); n++ {
			var err error
			if n%2 == 0 {
				err = prov.Download(ctx, props(race.Name, fmt.Sprintf("a-%d.tar", n), url))
			} else {
				p := props(filepath.Dir(local), "app.tar", url)
				p.ExtractParent = filepath.Join(race.Name, fmt.Sprintf("x-%d", n))
				err = prov.Extract(ctx, p)
			}
			switch {
			case err == nil:
				ok++
			case errors.Is(err, filetype.ErrSymlink):
				refused++
			default:
				others = append(others, err)
			}
		}
		swaps, err := race.Wait()
		Expect(err).ToNot(HaveOccurred())
		inGoal, inReal := listDir(goal), listDir(race.RealDir())
		var temps []string
		for _, name := range inReal {
			if tempName.MatchString(name) {
				temps = append(temps, name)
			}
		}
		GinkgoWriter.Printf("swaps=%d operations=%d succeeded=%d refused(ErrSymlink)=%d other-errors=%d in-goal=%d in-real-dir=%d temp-files=%d\n",
			swaps, n, ok, refused, len(others), len(inGoal), len(inReal), len(temps))
		Expect(swaps).To(BeNumerically(">", 0))
		Expect(inGoal).To(HaveLen(1), "writes landed in the root-only directory: %v", inGoal[:min(len(inGoal), 10)])
		Expect(os.ReadFile(filepath.Join(goal, "shadow"))).To(Equal([]byte("precious")))
		Expect(temps).To(HaveLen(0), "temporary files were left behind: %v", temps)
		Expect(others).To(HaveLen(0), "failed with something other than ErrSymlink: %v", others[:min(len(others), 5)])
	})
})

func listDir(dir string) []string {
	GinkgoHelper()
	des, err := os.ReadDir(dir)
	Expect(err).ToNot(HaveOccurred())
	var names []string
	for _, d := range des {
		names = append(names, d.Name())
	}
	return names
}
