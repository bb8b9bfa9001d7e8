package fileposix_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/fileposix"
	"github.com/ccm-fleet/ccm/providers/internal/swaprace"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

func TestMain(m *testing.M) {
	swaprace.MaybeRunHelper()
	os.Exit(m.Run())
}

// Bounds of the race: the swapper stops by itself after raceFor or
// raceSwaps exchanges, and the test makes at most raceEnsures ensures.
const (
	raceFor     = 3 * time.Second
	raceSwaps   = 50_000_000
	raceEnsures = 200_000
)

var _ = Describe("a directory swapped for a link while files are ensured", func() {
	It("never writes into the link's target and leaves no temporary file", func() {
		if os.Geteuid() != 0 {
			Fail("LOUD: this race test needs root (it runs a helper as uid 65534 and writes as root); run it as root")
		}
		ctx := context.Background()
		sticky, cleanup, err := swaprace.SharedDir()
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(cleanup)
		goal := GinkgoT().TempDir() // root-only: what the attacker wants written
		Expect(os.Chmod(goal, 0o700)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(goal, "shadow"), []byte("precious"), 0o600)).To(Succeed())
		prov := fileposix.New(nil)
		var ft filetype.Type

		race, err := swaprace.Start(sticky, goal, raceFor, raceSwaps)
		Expect(err).ToNot(HaveOccurred())

		type result struct {
			name string
			dir  bool
		}
		var (
			succeeded []result
			refused   int
			others    []error
			ensures   int
		)
		for ; ensures < raceEnsures && !race.Done(); ensures++ {
			p := &filetype.Properties{Owner: "root", Group: "root", Mode: "0644"}
			p.Name = filepath.Join(race.Name, fmt.Sprintf("f-%d", ensures))
			dir := ensures%4 == 3
			if dir {
				p.Ensure, p.Mode = filetype.EnsureDirectory, "0755"
			} else {
				c := fmt.Sprintf("v-%d", ensures)
				p.Content = &c
			}
			Expect(p.Validate()).To(Succeed())
			_, err := ft.Apply(ctx, &resources.ApplyContext{}, p, prov)
			switch {
			case err == nil:
				succeeded = append(succeeded, result{name: filepath.Base(p.Name), dir: dir})
			case errors.Is(err, filetype.ErrSymlink):
				refused++
			default:
				others = append(others, err)
			}
		}
		swaps, err := race.Wait()
		Expect(err).ToNot(HaveOccurred())

		real := race.RealDir()
		inGoal := listDir(goal)
		inReal := listDir(real)
		var temps []string
		for _, n := range append(append([]string{}, inGoal...), inReal...) {
			if strings.Contains(n, ".ccm-") {
				temps = append(temps, n)
			}
		}
		goalTemps := 0
		for _, n := range inGoal {
			if strings.Contains(n, ".ccm-") {
				goalTemps++
			}
		}
		GinkgoWriter.Printf("swaps=%d ensures=%d succeeded=%d refused(ErrSymlink)=%d other-errors=%d landed-in-goal=%d (of which temp files %d) in-real-dir=%d temp-files-total=%d\n",
			swaps, ensures, len(succeeded), refused, len(others), len(inGoal)-1, goalTemps, len(inReal), len(temps))
		AddReportEntry("race", fmt.Sprintf("swaps=%d ensures=%d succeeded=%d refused=%d other=%d goal=%v temps=%v",
			swaps, ensures, len(succeeded), refused, len(others), truncate(inGoal), truncate(temps)))

		Expect(swaps).To(BeNumerically(">", 0))
		Expect(ensures).To(BeNumerically(">", 0))
		Expect(inGoal).To(HaveLen(1), "writes landed in the root-only directory: %v", truncate(inGoal))
		Expect(inGoal).To(ConsistOf("shadow"))
		Expect(os.ReadFile(filepath.Join(goal, "shadow"))).To(Equal([]byte("precious")))
		Expect(temps).To(HaveLen(0), "temporary files were left behind: %v", truncate(temps))
		Expect(others).To(HaveLen(0), "ensures failed with something other than ErrSymlink: %v", firstErrors(others))
		for _, s := range succeeded {
			path := filepath.Join(real, s.name)
			if s.dir {
				Expect(path).To(BeADirectory())
				continue
			}
			Expect(os.ReadFile(path)).To(Equal([]byte("v-" + strings.TrimPrefix(s.name, "f-"))))
		}
	})
})

// truncate keeps a listing short enough for a report.
func truncate(names []string) []string {
	if len(names) > 10 {
		return append(names[:10:10], fmt.Sprintf("... %d more", len(names)-10))
	}
	return names
}

// firstErrors keeps the first few errors for a failure message.
func firstErrors(errs []error) []error {
	return errs[:min(len(errs), 5)]
}
