package lab_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ccm-fleet/ccm/internal/lab"
	"github.com/ccm-fleet/ccm/providers/apt/apttest"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("a lab host's package state", Ordered, func() {
	var (
		h         *lab.Host
		hostLists string // the host's /var/lib/apt/lists at boot
	)

	// hostState is what dpkg in the host records about name: "<version>
	// <status>", or "unknown" when it has no record.
	hostState := func(ctx SpecContext, name string) string {
		GinkgoHelper()
		res, err := h.Run(ctx, "dpkg-query", "-W", "-f=${Version} ${db:Status-Status}", "--", name)
		if res.Exit == 1 {
			Expect(res.Stderr).To(ContainSubstring("no packages found matching " + name))
			return "unknown"
		}
		Expect(err).NotTo(HaveOccurred())
		return res.Stdout
	}
	listing := func(ctx SpecContext) string {
		GinkgoHelper()
		res, err := h.Run(ctx, "ls", "-l", "--time-style=full-iso", "/var/lib/apt/lists")
		Expect(err).NotTo(HaveOccurred())
		return res.Stdout
	}

	BeforeAll(func(ctx SpecContext) {
		l, err := lab.Start(ctx, "pkgiso")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(l.Close)
		h = l.Host("pkgiso")
		hostLists = listing(ctx)
	})

	It("is the host's own: the machine's installs and removals after boot are not seen in it, nor its installs on the machine", func(ctx SpecContext) {
		// After the host booted: the machine-wide lock, a test repository
		// registered as an apt source on the machine (apt-get update), and
		// the test package installed on the machine with dpkg.
		repo, err := apttest.Setup(ctx, GinkgoT())
		Expect(err).NotTo(HaveOccurred())
		name := repo.PackageName()
		deb := func(version string) string {
			return filepath.Join(repo.Dir(), name+"_"+version+"_all.deb")
		}
		out, err := exec.CommandContext(ctx, "dpkg", "-i", deb("1.0-1")).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		Expect(repo.DpkgState(ctx)).To(Equal("1.0-1 installed"))

		Expect(hostState(ctx, name)).To(Equal("unknown"), "the host saw the machine's install")
		_, err = h.Run(ctx, "test", "-e", "/var/lib/dpkg/info/"+name+".list")
		Expect(err).To(HaveOccurred(), "the machine's dpkg info files show through in the host")
		res, err := h.Run(ctx, "dpkg", "-l")
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Stdout).NotTo(ContainSubstring(name))
		Expect(listing(ctx)).To(Equal(hostLists), "the machine's apt-get update changed the host's apt lists")

		// The host installs its own version; the machine keeps its own.
		Expect(h.InstallDeb(ctx, deb("2.0-1"))).To(Succeed())
		Expect(hostState(ctx, name)).To(Equal("2.0-1 installed"))
		Expect(repo.DpkgState(ctx)).To(Equal("1.0-1 installed"), "the machine saw the host's install")
		data, err := os.ReadFile(repo.DataFile())
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).To(Equal("1.0-1\n"))
		data, err = os.ReadFile(h.Path(repo.DataFile()))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).To(Equal("2.0-1\n"))

		// The machine purges its package; the host's stays installed.
		out, err = exec.CommandContext(ctx, "dpkg", "--purge", name).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		Expect(repo.DpkgState(ctx)).To(Equal("unknown"))
		Expect(hostState(ctx, name)).To(Equal("2.0-1 installed"), "the host saw the machine's purge")
		res, err = h.Run(ctx, "dpkg", "--audit")
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.TrimSpace(res.Stdout)).To(BeEmpty(), "dpkg in the host finds its database broken")
	})
})

var _ = Describe("taking the machine's package locks", func() {
	It("waits a bounded time for a lock another process holds, then fails naming the holder", func(ctx SpecContext) {
		path := filepath.Join(GinkgoT().TempDir(), "lock-frontend")
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "CCM_LAB_TEST_HOLD_LOCK="+path)
		stdin, err := cmd.StdinPipe()
		Expect(err).NotTo(HaveOccurred())
		stdout, err := cmd.StdoutPipe()
		Expect(err).NotTo(HaveOccurred())
		Expect(cmd.Start()).To(Succeed())
		DeferCleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
		line, err := bufio.NewReader(stdout).ReadString('\n')
		Expect(err).NotTo(HaveOccurred())
		Expect(line).To(Equal("locked\n"))

		_, err = lab.LockFile(ctx, path, 300*time.Millisecond)
		comm := filepath.Base(os.Args[0])
		Expect(err).To(MatchError(fmt.Sprintf("lock %s held by process %d (%s) for longer than 300ms", path, cmd.Process.Pid, comm[:min(len(comm), 15)])))

		// Released, it is taken, and held until the release.
		Expect(stdin.Close()).To(Succeed())
		Expect(cmd.Wait()).To(Succeed())
		unlock, err := lab.LockFile(ctx, path, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		unlock()
	})

	It("takes nothing where the directory does not exist", func(ctx SpecContext) {
		unlock, err := lab.LockFile(ctx, filepath.Join(GinkgoT().TempDir(), "missing", "lock"), time.Minute)
		Expect(err).NotTo(HaveOccurred())
		unlock()
	})
})
