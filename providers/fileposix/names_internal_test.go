package fileposix

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
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

	It("sees an account added, renumbered and removed by the next lookup after the account file's change", func() {
		if os.Geteuid() != 0 {
			Fail("LOUD: this spec needs root (it adds an account with useradd); run it as root")
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
		Expect(owner()).To(Equal(first), "added")
		Expect(n.users.ids).To(HaveKey(name), "cached")

		second := free()
		run("usermod", "-u", strconv.Itoa(second), name)
		Expect(owner()).To(Equal(second), "renumbered")

		run("userdel", name)
		_, err = owner()
		Expect(err).To(HaveOccurred(), "removed")
	})
})

var _ = Describe("idNames' account file stamps", func() {
	var (
		n      *idNames
		passwd string
	)
	BeforeEach(func() {
		dir := GinkgoT().TempDir()
		passwd = filepath.Join(dir, "passwd")
		Expect(os.WriteFile(passwd, []byte("root:x:0:0:root:/root:/bin/sh\n"), 0o644)).To(Succeed())
		n = newIDNames()
		n.passwdFile = passwd
		n.groupFile = filepath.Join(dir, "group-missing")
	})
	// planted is served only from the cache: no account has this uid.
	const planted = 424242
	plant := func() {
		GinkgoHelper()
		uid, _, err := n.ownerGroup("root", "0")
		Expect(err).ToNot(HaveOccurred())
		Expect(uid).To(Equal(0))
		n.mu.Lock()
		n.users.ids["root"] = idEntry{id: planted, fetched: time.Now()}
		n.mu.Unlock()
		uid, _, err = n.ownerGroup("root", "0")
		Expect(err).ToNot(HaveOccurred())
		Expect(uid).To(Equal(planted), "served from the cache while the file is unchanged")
	}
	owner := func() int {
		GinkgoHelper()
		uid, _, err := n.ownerGroup("root", "0")
		Expect(err).ToNot(HaveOccurred())
		return uid
	}

	It("empties the cache at the next lookup when the file is rewritten with the same size and mtime (ctime)", func() {
		plant()
		fi, err := os.Stat(passwd)
		Expect(err).ToNot(HaveOccurred())
		Expect(os.WriteFile(passwd, []byte("toor:x:0:0:root:/root:/bin/sh\n"), 0o644)).To(Succeed())
		Expect(os.Chtimes(passwd, fi.ModTime(), fi.ModTime())).To(Succeed())
		Expect(owner()).To(Equal(0))
	})

	It("empties the cache at the next lookup when a new file is renamed over it (inode)", func() {
		plant()
		next := passwd + ".new"
		Expect(os.WriteFile(next, []byte("root:x:0:0:root:/root:/bin/sh\n"), 0o644)).To(Succeed())
		Expect(os.Rename(next, passwd)).To(Succeed())
		Expect(owner()).To(Equal(0))
	})

	It("empties the cache at the next lookup when an account is appended (size)", func() {
		plant()
		f, err := os.OpenFile(passwd, os.O_APPEND|os.O_WRONLY, 0)
		Expect(err).ToNot(HaveOccurred())
		_, err = f.WriteString("ccmtest:x:4000:4000::/:/bin/sh\n")
		Expect(err).ToNot(HaveOccurred())
		Expect(f.Close()).To(Succeed())
		Expect(owner()).To(Equal(0))
	})

	It("caches nothing while the file cannot be looked at", func() {
		Expect(os.Remove(passwd)).To(Succeed())
		Expect(owner()).To(Equal(0))
		Expect(n.users.ids).To(BeEmpty())
	})

	It("answers concurrent lookups while the file changes under them", func() {
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				defer GinkgoRecover()
				for i := range 200 {
					if g == 0 && i%20 == 0 {
						Expect(os.WriteFile(passwd, fmt.Appendf(nil, "root:x:0:0:root %d:/root:/bin/sh\n", i), 0o644)).To(Succeed())
					}
					uid, gid, err := n.ownerGroup("root", "0")
					Expect(err).ToNot(HaveOccurred())
					Expect([]int{uid, gid}).To(Equal([]int{0, 0}))
					Expect(n.user(0)).To(Equal("root"))
				}
			})
		}
		wg.Wait()
	})

	It("stays bounded", func() {
		for i := range maxCachedNames + 10 {
			_, _, err := n.ownerGroup(strconv.Itoa(100000+i), "0")
			Expect(err).ToNot(HaveOccurred())
		}
		Expect(len(n.users.ids)).To(BeNumerically("<=", maxCachedNames))
		Expect(n.users.ids).ToNot(BeEmpty())
	})
})
