package shadow_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources/engine"
)

var _ = Describe("users and groups in manifests", func() {
	var dir string
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		cleanupAccounts([]string{"ccmapp", "ccmother"}, []string{"ccmappgrp"})
	})

	runManifest := func(doc string) *manifest.Report {
		GinkgoHelper()
		m, err := manifest.Parse([]byte(strings.ReplaceAll(doc, "DIR", dir)), manifest.ParseOptions{WorkingDir: dir})
		Expect(err).NotTo(HaveOccurred())
		log := slog.New(slog.NewJSONHandler(logs, nil))
		reg, err := providers.Builtin(providers.Options{Runner: runner.Exec{}, Log: log})
		Expect(err).NotTo(HaveOccurred())
		rep, err := manifest.Run(GinkgoT().Context(), engine.New(reg, engine.WithLogger(log)), m, manifest.RunOptions{Facts: map[string]any{"os": "debian"}})
		Expect(err).NotTo(HaveOccurred())
		return rep
	}
	refs := func(rep *manifest.Report) []string {
		var out []string
		for _, ev := range rep.Events {
			out = append(out, ev.ResourceID())
		}
		return out
	}

	// The file and the user name the group and the user before the
	// manifest declares them: autorequire runs those first.
	const doc = `
ccm:
  resources:
    - file:
        - DIR/owned:
            content: "mine\n"
            owner: ccmapp
            group: ccmappgrp
            mode: "0640"
    - user:
        - ccmapp:
            uid: UID
            groups: [ccmappgrp]
            shell: /bin/sh
    - group:
        - ccmappgrp: {gid: 2501}
`

	It("runs a user and a group that a file or a user names first, without a require", func() {
		rep := runManifest(strings.Replace(doc, "UID", "2502", 1))
		Expect(refs(rep)).To(Equal([]string{"group#ccmappgrp", "user#ccmapp", "file#" + dir + "/owned"}))
		Expect(rep.Summary.Failed).To(BeZero(), "%v", rep.Events)
		info, err := os.Stat(filepath.Join(dir, "owned"))
		Expect(err).NotTo(HaveOccurred())
		st := info.Sys().(*syscall.Stat_t)
		Expect(st.Uid).To(BeEquivalentTo(2502))
		Expect(st.Gid).To(BeEquivalentTo(2501))
		Expect(supplementaryOf("ccmapp")).To(ConsistOf("ccmappgrp"))

		again := runManifest(strings.Replace(doc, "UID", "2502", 1))
		Expect(again.Summary.Changed).To(BeZero())
	})

	It("skips what names a user that failed: the implicit require is unmet", func() {
		run("useradd", "-M", "-N", "-u", "2503", "ccmother")
		rep := runManifest(strings.Replace(doc, "UID", "2503", 1))
		Expect(refs(rep)).To(Equal([]string{"group#ccmappgrp", "user#ccmapp", "file#" + dir + "/owned"}))
		user, file := rep.Events[1], rep.Events[2]
		Expect(user.Failed).To(BeTrue())
		Expect(strings.Join(user.Errors, " ")).To(ContainSubstring("uid 2503 belongs to user ccmother"))
		Expect(file.Skipped).To(BeTrue())
		Expect(file.UnmetRequirements).To(Equal([]string{"user#ccmapp"}))
		Expect(filepath.Join(dir, "owned")).NotTo(BeAnExistingFile())
	})
})

// supplementaryOf lists a user's supplementary groups from /etc/group.
func supplementaryOf(name string) []string {
	GinkgoHelper()
	data, err := os.ReadFile("/etc/group")
	Expect(err).NotTo(HaveOccurred())
	var out []string
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Split(line, ":")
		if len(f) == 4 && f[3] != "" {
			for _, m := range strings.Split(f[3], ",") {
				if m == name {
					out = append(out, f[0])
				}
			}
		}
	}
	return out
}
