package shadow_test

import (
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources"
)

var _ = Describe("groupadd provider", func() {
	BeforeEach(func() {
		cleanupAccounts([]string{"gmember1", "gmember2", "gmember3"}, []string{"ccmgrp", "ccmother", "ccmsys"})
		for _, u := range []string{"gmember1", "gmember2", "gmember3"} {
			run("useradd", "-M", "-N", u)
		}
	})

	It("creates a group (noop first), is stable, then removes it (noop first)", func() {
		props := map[string]any{"name": "ccmgrp", "gid": 2101}
		ev := noopSays("group", props, "Would have created the group")
		Expect(ev.Diff.Changes).To(ContainElement(HaveField("Field", "ensure")))
		Expect(getent("group", "ccmgrp")).To(BeEmpty())

		ev = applied("group", props)
		Expect(ev.Provider).To(Equal("groupadd"))
		Expect(getent("group", "ccmgrp")).To(Equal("ccmgrp:x:2101:"))
		stable("group", props)

		absent := map[string]any{"name": "ccmgrp", "ensure": "absent"}
		noopSays("group", absent, "Would have removed the group")
		applied("group", absent)
		Expect(getent("group", "ccmgrp")).To(BeEmpty())
		stable("group", absent)
	})

	It("changes the gid both ways", func() {
		applied("group", map[string]any{"name": "ccmgrp", "gid": 2101})
		up := map[string]any{"name": "ccmgrp", "gid": 2102}
		ev := noopSays("group", up, "Would have changed gid 2101 to 2102")
		Expect(ev.Diff.Changes).To(ConsistOf(HaveField("Field", "gid")))
		applied("group", up)
		Expect(field(getent("group", "ccmgrp"), 2)).To(Equal("2102"))
		stable("group", up)
		down := map[string]any{"name": "ccmgrp", "gid": 2101}
		noopSays("group", down, "Would have changed gid 2102 to 2101")
		applied("group", down)
		Expect(field(getent("group", "ccmgrp"), 2)).To(Equal("2101"))
	})

	It("makes a system group in the system range, and a normal one above it", func() {
		applied("group", map[string]any{"name": "ccmsys", "system": true})
		applied("group", map[string]any{"name": "ccmother"})
		Expect(gidOf("ccmsys")).To(BeNumerically("<", 1000))
		Expect(gidOf("ccmother")).To(BeNumerically(">=", 1000))
	})

	It("adds members with membership minimum, keeping the others", func() {
		applied("group", map[string]any{"name": "ccmgrp", "members": []any{"gmember1"}})
		Expect(field(getent("group", "ccmgrp"), 3)).To(Equal("gmember1"))
		props := map[string]any{"name": "ccmgrp", "members": []any{"gmember2"}}
		noopSays("group", props, "Would have added members gmember2")
		applied("group", props)
		Expect(strings.Split(field(getent("group", "ccmgrp"), 3), ",")).To(ConsistOf("gmember1", "gmember2"))
		stable("group", props)
	})

	It("makes the members exactly the list with membership inclusive, both ways", func() {
		applied("group", map[string]any{"name": "ccmgrp", "members": []any{"gmember1", "gmember2"}})
		props := map[string]any{"name": "ccmgrp", "members": []any{"gmember3"}, "membership": "inclusive"}
		noopSays("group", props, "Would have added members gmember3. Would have removed members gmember1, gmember2")
		applied("group", props)
		Expect(field(getent("group", "ccmgrp"), 3)).To(Equal("gmember3"))
		stable("group", props)
		none := map[string]any{"name": "ccmgrp", "members": []any{}, "membership": "inclusive"}
		noopSays("group", none, "Would have removed members gmember3")
		applied("group", none)
		Expect(field(getent("group", "ccmgrp"), 3)).To(BeEmpty())
		stable("group", none)
	})

	It("fails, changing nothing, when another group holds the gid", func() {
		applied("group", map[string]any{"name": "ccmother", "gid": 2103})
		failsUnchanged("group", map[string]any{"name": "ccmgrp", "gid": 2103}, "gid 2103 belongs to group ccmother; nothing was changed")
		Expect(getent("group", "ccmgrp")).To(BeEmpty())
		applied("group", map[string]any{"name": "ccmgrp", "gid": 2104})
		failsUnchanged("group", map[string]any{"name": "ccmgrp", "gid": 2103}, "gid 2103 belongs to group ccmother")
		Expect(field(getent("group", "ccmgrp"), 2)).To(Equal("2104"))
	})

	It("refuses names a tool could read as an option before running anything", func() {
		before := accountFiles()
		for _, name := range []string{"-r", "a,b", "a:b", "a b", "../x", ""} {
			_, err := try("group", map[string]any{"name": name}, false)
			Expect(err).To(MatchError(resources.ErrInvalid), name)
			Expect(err.Error()).To(ContainSubstring("property name"))
		}
		Expect(accountFiles()).To(Equal(before))
	})
})

func gidOf(name string) int {
	GinkgoHelper()
	n, err := strconv.Atoi(field(getent("group", name), 2))
	Expect(err).NotTo(HaveOccurred())
	return n
}
