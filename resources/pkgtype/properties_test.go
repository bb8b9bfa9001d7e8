package pkgtype_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// decode decodes properties the way the engine does: strictly.
func decode(js string) (*pkgtype.Properties, error) {
	p := pkgtype.Type{}.NewProperties().(*pkgtype.Properties)
	dec := json.NewDecoder(bytes.NewReader([]byte(js)))
	dec.DisallowUnknownFields()
	return p, dec.Decode(p)
}

var _ = Describe("Properties", func() {
	It("decodes the common properties and nothing else", func() {
		p, err := decode(`{"name":"nginx","ensure":"1.24.0-1.el9","provider":"dnf"}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Name).To(Equal("nginx"))
		Expect(p.Ensure).To(Equal("1.24.0-1.el9"))
		Expect(p.Provider).To(Equal("dnf"))
		Expect(p.Validate()).To(Succeed())

		_, err = decode(`{"name":"nginx","version":"1.0"}`)
		Expect(err).To(MatchError(ContainSubstring(`unknown field "version"`)))
	})

	It("defaults ensure to present", func() {
		p := props("vim", "")
		Expect(p.Validate()).To(Succeed())
		Expect(p.Ensure).To(Equal("present"))
	})

	DescribeTable("accepts package names and versions of the allowed characters",
		func(name, ensure string) {
			Expect(props(name, ensure).Validate()).To(Succeed())
		},
		Entry("plain", "nginx", "present"),
		Entry("plus signs", "libstdc++6", "absent"),
		Entry("dots and digits", "python3.11", "latest"),
		Entry("architecture qualifier", "libc6:amd64", "present"),
		Entry("underscore", "foo_bar", "present"),
		Entry("tilde and plus in a version", "zsh", "5.9-4+b1~bpo12"),
		Entry("epoch in a version", "openssh-server", "1:9.2p1-2+deb12u3"),
		Entry("rpm style version", "nginx", "1.24.0-1.el9"),
		Entry("256 bytes", strings.Repeat("a", 256), "present"),
		Entry("256 byte version", "nginx", strings.Repeat("1", 256)),
	)

	DescribeTable("refuses an injected package name before any process starts",
		func(ctx context.Context, name string) {
			Expect(pkgtype.ValidateName(name)).To(MatchError(resources.ErrInvalid))
			Expect(props(name, "present").Validate()).To(MatchError(resources.ErrInvalid))

			f := newFake("absent")
			_, err := apply(ctx, false, props(name, "present"), f)
			Expect(err).To(MatchError(resources.ErrInvalid))
			Expect(f.Calls()).To(BeEmpty())
		},
		Entry("an option", "-oAPT::Get::AllowUnauthenticated=true"),
		Entry("a long option", "--purge"),
		Entry("a lone hyphen", "-"),
		Entry("a command after a semicolon", ";rm -rf /"),
		Entry("command substitution", "$(x)"),
		Entry("backticks", "`id`"),
		Entry("a NUL byte", "nginx\x00"),
		Entry("257 bytes", strings.Repeat("a", 257)),
		Entry("a unicode hyphen look-alike", "nginx\u2010"),
		Entry("fullwidth letters", "ｎｇｉｎｘ"),
		Entry("a space", "nginx vim"),
		Entry("a newline", "nginx\nvim"),
		Entry("a tab", "nginx\t"),
		Entry("single quotes", "'nginx'"),
		Entry("double quotes", `"nginx"`),
		Entry("a pipe", "nginx|sh"),
		Entry("an ampersand", "nginx&"),
		Entry("a redirection", "nginx>/etc/passwd"),
		Entry("a path", "../../etc/passwd"),
		Entry("an absolute path", "/tmp/evil.deb"),
		Entry("a backslash", `nginx\`),
		Entry("a glob", "nginx*"),
		Entry("a bracket glob", "ngin[x]"),
		Entry("an apt version pin", "nginx=1.0"),
		Entry("a comma", "nginx,vim"),
		Entry("an apt pattern", "~nnginx"),
		Entry("an apt long pattern", "?name(nginx)"),
		Entry("a leading dot", ".nginx"),
		Entry("a leading plus", "+nginx"),
		Entry("a leading tilde", "~nginx"),
		Entry("empty", ""),
	)

	DescribeTable("refuses an injected version before any process starts",
		func(ctx context.Context, version string) {
			Expect(pkgtype.ValidateVersion(version)).To(MatchError(resources.ErrInvalid))
			Expect(props("nginx", version).Validate()).To(MatchError(resources.ErrInvalid))

			f := newFake("1.0")
			_, err := apply(ctx, false, props("nginx", version), f)
			Expect(err).To(MatchError(resources.ErrInvalid))
			Expect(f.Calls()).To(BeEmpty())
		},
		Entry("an option", "-1.0"),
		Entry("a long option", "--allow-unauthenticated"),
		Entry("a command after a semicolon", "1.0;rm -rf /"),
		Entry("command substitution", "$(x)"),
		Entry("backticks", "1.0`id`"),
		Entry("a NUL byte", "1.0\x00"),
		Entry("257 bytes", strings.Repeat("1", 257)),
		Entry("a unicode hyphen look-alike", "1.0\u20101"),
		Entry("a space", "1.0 2.0"),
		Entry("a path separator", "1.0/../x"),
	)

	It("names the property and shows look-alikes escaped", func() {
		err := props("nginx\u2010", "present").Validate()
		Expect(err).To(MatchError(ContainSubstring("property name")))
		Expect(err).To(MatchError(ContainSubstring(`"nginx\u2010"`)))

		err = props("nginx", "-1").Validate()
		Expect(err).To(MatchError(ContainSubstring("property ensure")))
		Expect(err).To(MatchError(ContainSubstring("starts with a hyphen")))
	})

	DescribeTable("IsVersion tells versions from the special ensure values",
		func(ensure string, want bool) {
			Expect(pkgtype.IsVersion(ensure)).To(Equal(want))
		},
		Entry(nil, "present", false),
		Entry(nil, "absent", false),
		Entry(nil, "latest", false),
		Entry(nil, "1.0", true),
		Entry(nil, "installed", true),
	)
})
