package shadow_test

import (
	"os"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
)

// Two crypt(3) hashes (openssl passwd -6) of throw-away passwords.
const (
	hash1 = "$6$ccmfleet1$mKVqfZ4t9CuuQZ1EVkSwPhGBmcYgdKXrIKRE39adBPtrpCyPKlqR9w023ehpfXRx02OMoUJnD7WJDotYwuzC20"
	hash2 = "$6$ccmfleet2$y0qwmHaC3V4Nc0MheU8kkXzJsxBat4PnnZITYDi96UBiOQ18vWS4Jv4QUmiVtOkdxyWZtJdQY5uqqnROjF2S4."
)

// user returns the properties of user ccmuser with extra ones.
func user(kv ...any) map[string]any {
	p := map[string]any{"name": "ccmuser"}
	for i := 0; i < len(kv); i += 2 {
		p[kv[i].(string)] = kv[i+1]
	}
	return p
}

// changeBothWays creates ccmuser with from, then checks the noop message
// and the change to to and back to from.
func changeBothWays(key string, from, to any, fwd, back string, check func(want any)) {
	GinkgoHelper()
	ev := ensure("user", user(key, from), false)
	Expect(ev.Errors).To(BeEmpty())
	check(from)
	noopSays("user", user(key, to), fwd)
	applied("user", user(key, to))
	check(to)
	stable("user", user(key, to))
	noopSays("user", user(key, from), back)
	applied("user", user(key, from))
	check(from)
	stable("user", user(key, from))
}

var _ = Describe("useradd provider", func() {
	BeforeEach(func() {
		cleanupAccounts([]string{"ccmuser", "ccmother"}, []string{"ccmg1", "ccmg2", "ccmg3", "ccmuser"})
		for _, g := range []string{"ccmg1", "ccmg2", "ccmg3"} {
			run("groupadd", g)
		}
	})

	It("creates an account (noop first), is stable, then removes it (noop first)", func() {
		ev := noopSays("user", user(), "Would have created the user")
		Expect(ev.Diff.Changes).To(ConsistOf(protocol.Change{Field: "ensure", From: "absent", To: "present"}))
		Expect(getent("passwd", "ccmuser")).To(BeEmpty())
		ev = applied("user", user())
		Expect(ev.Provider).To(Equal("useradd"))
		Expect(getent("passwd", "ccmuser")).NotTo(BeEmpty())
		st := ev.Status.(*protocol.UserState)
		Expect(st.Protocol).To(Equal("io.choria.ccm.v1.resource.user.state"))
		Expect(st.Ensure).To(Equal("present"))
		stable("user", user())

		absent := user("ensure", "absent")
		noopSays("user", absent, "Would have removed the user")
		applied("user", absent)
		Expect(getent("passwd", "ccmuser")).To(BeEmpty())
		stable("user", absent)
	})

	It("changes the uid both ways", func() {
		changeBothWays("uid", 2201, 2202, "Would have changed uid 2201 to 2202", "Would have changed uid 2202 to 2201",
			func(want any) { Expect(field(getent("passwd", "ccmuser"), 2)).To(Equal(itoa(want))) })
	})

	It("changes the primary group by name both ways", func() {
		changeBothWays("group", "ccmg1", "ccmg2", "Would have changed group ccmg1 to ccmg2", "Would have changed group ccmg2 to ccmg1",
			func(want any) {
				Expect(field(getent("passwd", "ccmuser"), 3)).To(Equal(field(getent("group", want.(string)), 2)))
			})
	})

	It("changes the primary group by gid both ways", func() {
		g1, g2 := field(getent("group", "ccmg1"), 2), field(getent("group", "ccmg2"), 2)
		changeBothWays("gid", atoi(g1), atoi(g2), "Would have changed gid "+g1+" to "+g2, "Would have changed gid "+g2+" to "+g1,
			func(want any) { Expect(field(getent("passwd", "ccmuser"), 3)).To(Equal(itoa(want))) })
	})

	It("adds supplementary groups with membership minimum, keeping the others", func() {
		applied("user", user("groups", []any{"ccmg1"}))
		props := user("groups", []any{"ccmg2"})
		noopSays("user", props, "Would have added groups ccmg2")
		applied("user", props)
		Expect(supplementary()).To(ConsistOf("ccmg1", "ccmg2"))
		stable("user", props)
	})

	It("makes the supplementary groups exactly the list with membership inclusive, both ways", func() {
		applied("user", user("groups", []any{"ccmg1", "ccmg2"}))
		props := user("groups", []any{"ccmg3"}, "membership", "inclusive")
		noopSays("user", props, "Would have added groups ccmg3. Would have removed groups ccmg1, ccmg2")
		applied("user", props)
		Expect(supplementary()).To(ConsistOf("ccmg3"))
		stable("user", props)
		none := user("groups", []any{}, "membership", "inclusive")
		noopSays("user", none, "Would have removed groups ccmg3")
		applied("user", none)
		Expect(supplementary()).To(BeEmpty())
		stable("user", none)
	})

	It("changes the shell both ways", func() {
		changeBothWays("shell", "/bin/sh", "/bin/bash", "Would have changed shell /bin/sh to /bin/bash", "Would have changed shell /bin/bash to /bin/sh",
			func(want any) { Expect(field(getent("passwd", "ccmuser"), 6)).To(Equal(want)) })
	})

	It("changes the comment both ways, to empty too", func() {
		changeBothWays("comment", "Deploy user", "Deploy, CI", "Would have changed comment Deploy user to Deploy, CI", "Would have changed comment Deploy, CI to Deploy user",
			func(want any) { Expect(field(getent("passwd", "ccmuser"), 4)).To(Equal(want)) })
		noopSays("user", user("comment", ""), `Would have changed comment Deploy user to ""`)
		applied("user", user("comment", ""))
		Expect(field(getent("passwd", "ccmuser"), 4)).To(BeEmpty())
	})

	It("changes the home without touching directories, and with manage_home creates and removes it, never moving one", func() {
		changeBothWays("home", "/home/ccm-a", "/home/ccm-b", "Would have changed home /home/ccm-a to /home/ccm-b", "Would have changed home /home/ccm-b to /home/ccm-a",
			func(want any) { Expect(field(getent("passwd", "ccmuser"), 5)).To(Equal(want)) })
		Expect("/home/ccm-a").NotTo(BeADirectory())
		applied("user", user("ensure", "absent"))

		applied("user", user("home", "/home/ccm-a", "manage_home", true))
		Expect("/home/ccm-a").To(BeADirectory())
		Expect(os.WriteFile("/home/ccm-a/keep", []byte("x"), 0o644)).To(Succeed())
		// A move takes the old home from where it is, and the policy
		// judges only the home the resource names: refused, noop too.
		moved := user("home", "/home/ccm-b", "manage_home", true)
		failsUnchanged("user", moved, "its home is /home/ccm-a: manage_home does not move a home to /home/ccm-b")
		Expect("/home/ccm-a/keep").To(BeARegularFile())
		Expect("/home/ccm-b").NotTo(BeADirectory())
		Expect(field(getent("passwd", "ccmuser"), 5)).To(Equal("/home/ccm-a"))

		failsUnchanged("user", user("ensure", "absent", "home", "/home/ccm-b", "manage_home", true),
			"its home is /home/ccm-a, not /home/ccm-b: refusing to remove a home the resource does not name; nothing was changed")
		Expect("/home/ccm-a").To(BeADirectory())
		absent := user("ensure", "absent", "home", "/home/ccm-a", "manage_home", true)
		noopSays("user", absent, "Would have removed the user")
		applied("user", absent)
		Expect("/home/ccm-a").NotTo(BeADirectory())
		Expect(getent("passwd", "ccmuser")).To(BeEmpty())
	})

	It("creates a system account in the system range without password aging", func() {
		applied("user", user("system", true))
		Expect(atoi(field(getent("passwd", "ccmuser"), 2))).To(BeNumerically("<", 1000))
		sh := getent("shadow", "ccmuser")
		Expect(field(sh, 3)).To(BeEmpty(), "min days: %s", sh)
		Expect(field(sh, 4)).To(BeEmpty(), "max days: %s", sh)
		applied("user", user("name", "ccmother"))
		Expect(atoi(field(getent("passwd", "ccmother"), 2))).To(BeNumerically(">=", 1000))
	})

	It("sets an expiry date (an expired account) and never, both ways", func() {
		changeBothWays("expiry", "2000-01-01", "never", "Would have changed expiry 2000-01-01 to never", "Would have changed expiry never to 2000-01-01",
			func(want any) {
				days := field(getent("shadow", "ccmuser"), 7)
				if want == "never" {
					Expect(days).To(BeEmpty())
				} else {
					Expect(days).To(Equal("10957")) // 2000-01-01 in days since the epoch
				}
			})
		ev := ensure("user", user(), true)
		Expect(ev.Status.(*protocol.UserState).Metadata.Expiry).To(Equal("2000-01-01"))
	})

	It("locks and unlocks the account both ways, and keeps it locked when the hash changes", func() {
		applied("user", user("password", hash1))
		Expect(field(getent("shadow", "ccmuser"), 1)).To(Equal(hash1))
		changeBothWays("locked", false, true, "Would have locked the account", "Would have unlocked the account",
			func(want any) {
				Expect(strings.HasPrefix(field(getent("shadow", "ccmuser"), 1), "!")).To(Equal(want))
			})
		applied("user", user("locked", true, "password", hash2))
		Expect(field(getent("shadow", "ccmuser"), 1)).To(Equal("!" + hash2))
		stable("user", user("locked", true, "password", hash2))
		ev := ensure("user", user(), true)
		Expect(ev.Status.(*protocol.UserState).Metadata.Locked).To(BeTrue())
	})

	It("sets and changes the password hash, which never leaves the host", func() {
		applied("user", user())
		props := user("password", hash1)
		ev := noopSays("user", props, "Would have changed the password")
		Expect(ev.Diff.Changes).To(ConsistOf(HaveField("Field", "password")))
		ev = applied("user", props)
		Expect(field(getent("shadow", "ccmuser"), 1)).To(Equal(hash1))
		Expect(ev.Status.(*protocol.UserState).Metadata.PasswordSet).To(BeTrue())
		stable("user", props)
		ev = applied("user", user("password", hash2, "shell", "/bin/bash"))
		Expect(field(getent("shadow", "ccmuser"), 1)).To(Equal(hash2))

		for _, h := range []string{hash1, hash2, hash1[12:40], hash2[12:40]} {
			Expect(eventJSON(ev)).NotTo(ContainSubstring(h))
			Expect(logs.String()).NotTo(ContainSubstring(h))
		}
		Expect(ev.Diff.Sensitive).To(BeTrue())
		Expect(eventJSON(ev)).To(ContainSubstring(`"sensitive":true`))
	})

	It("refuses a clear-text password without quoting it, changing nothing", func() {
		before := accountFiles()
		_, err := try("user", user("password", "hunter2secret"), false)
		Expect(err).To(MatchError(resources.ErrInvalid))
		Expect(err.Error()).To(ContainSubstring("property password: is not a crypt(3) hash"))
		Expect(err.Error()).NotTo(ContainSubstring("hunter2secret"))
		Expect(accountFiles()).To(Equal(before))
	})

	It("fails, changing nothing, on a uid another user holds", func() {
		applied("user", user("name", "ccmother", "uid", 2301))
		failsUnchanged("user", user("uid", 2301), "uid 2301 belongs to user ccmother; nothing was changed")
		Expect(getent("passwd", "ccmuser")).To(BeEmpty())
		applied("user", user("uid", 2302))
		failsUnchanged("user", user("uid", 2301), "uid 2301 belongs to user ccmother")
		Expect(field(getent("passwd", "ccmuser"), 2)).To(Equal("2302"))
	})

	It("fails, changing nothing, on a name a group already has (useradd would make that group)", func() {
		run("groupadd", "ccmuser")
		failsUnchanged("user", user(), "group ccmuser exists")
		Expect(getent("passwd", "ccmuser")).To(BeEmpty())
	})

	It("fails, changing nothing, on a primary or supplementary group that does not exist", func() {
		failsUnchanged("user", user("group", "ccmnosuch"), "ccmnosuch")
		failsUnchanged("user", user("groups", []any{"ccmnosuch"}), "ccmnosuch")
		Expect(getent("passwd", "ccmuser")).To(BeEmpty())
	})

	It("creates an account with every attribute at once, stable after", func() {
		props := user("uid", 2401, "group", "ccmg1", "groups", []any{"ccmg2", "ccmg3"}, "home", "/home/ccmuser", "manage_home", true,
			"shell", "/bin/bash", "comment", "Everything", "password", hash1, "expiry", "2099-12-31", "locked", true)
		applied("user", props)
		Expect(getent("passwd", "ccmuser")).To(Equal("ccmuser:x:2401:" + field(getent("group", "ccmg1"), 2) + ":Everything:/home/ccmuser:/bin/bash"))
		Expect(field(getent("shadow", "ccmuser"), 1)).To(Equal("!" + hash1))
		Expect(supplementary()).To(ConsistOf("ccmg2", "ccmg3"))
		Expect("/home/ccmuser").To(BeADirectory())
		stable("user", props)
	})
})

// supplementary lists ccmuser's supplementary groups from /etc/group.
func supplementary() []string { return supplementaryOf("ccmuser") }
