package fileposix

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("idNames.ownerGroup", func() {
	It("reads names and numbers, and never caches a name that names no account", func() {
		n := newIDNames()
		uid, gid, err := n.ownerGroup("root", "root")
		Expect(err).ToNot(HaveOccurred())
		Expect([]int{uid, gid}).To(Equal([]int{0, 0}))
		Expect(n.users.ids).To(HaveKey("root"))
		Expect(n.groups.ids).To(HaveKey("root"))

		uid, gid, err = n.ownerGroup("12345", "23456")
		Expect(err).ToNot(HaveOccurred())
		Expect([]int{uid, gid}).To(Equal([]int{12345, 23456}))

		_, _, err = n.ownerGroup("ccm-no-such-user", "root")
		var ae *AccountError
		Expect(errors.As(err, &ae)).To(BeTrue(), "%v", err)
		Expect(ae.Property).To(Equal("owner"))
		Expect(n.users.ids).ToNot(HaveKey("ccm-no-such-user"))
		_, _, err = n.ownerGroup("root", "ccm-no-such-group")
		Expect(errors.As(err, &ae)).To(BeTrue(), "%v", err)
		Expect(ae.Property).To(Equal("group"))
	})

	It("sees an account added, renumbered and removed within a second of the account file's change", func() {
		if os.Geteuid() != 0 {
			Skip("needs root to add an account")
		}
		name := fmt.Sprintf("ccmtest%d", rand.N(1_000_000))
		free := func() int {
			for {
				id := 40000 + rand.N(20000)
				if _, err := user.LookupId(strconv.Itoa(id)); err != nil {
					return id
				}
			}
		}
		run := func(args ...string) {
			GinkgoHelper()
			out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
			Expect(err).ToNot(HaveOccurred(), string(out))
		}
		n := newIDNames()
		_, _, err := n.ownerGroup(name, "root")
		Expect(err).To(HaveOccurred(), "no such account yet")

		first := free()
		run("useradd", "-M", "-N", "-u", strconv.Itoa(first), name)
		DeferCleanup(func() { _ = exec.Command("userdel", name).Run() })
		owner := func() (int, error) {
			uid, _, err := n.ownerGroup(name, "root")
			return uid, err
		}
		Eventually(owner).WithTimeout(5 * time.Second).Should(Equal(first))
		Expect(n.users.ids).To(HaveKey(name), "cached")

		second := free()
		run("usermod", "-u", strconv.Itoa(second), name)
		Eventually(owner).WithTimeout(5*time.Second).Should(Equal(second), "renumbered")

		run("userdel", name)
		Eventually(func() error {
			_, err := owner()
			return err
		}).WithTimeout(5*time.Second).Should(HaveOccurred(), "removed")
	})
})
