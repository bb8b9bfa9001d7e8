package filetype_test

import (
	"encoding/json"
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"gopkg.in/yaml.v3"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

func ptr(s string) *string { return &s }

// validProps returns properties that pass Validate for ensure present.
func validProps() *filetype.Properties {
	p := &filetype.Properties{Owner: "root", Group: "root", Mode: "0644"}
	p.Name = "/etc/motd"
	return p
}

// decodeProps decodes a property document the way the engine does.
func decodeProps(doc string) (*filetype.Properties, error) {
	p := &filetype.Properties{}
	err := protocol.DecodeJSONStrict([]byte(doc), p)
	return p, err
}

var _ = Describe("Properties", func() {
	Describe("mode validation", func() {
		DescribeTable("accepts an octal mode up to 0777, with or without a leading 0, 0o or 0O",
			func(input, normalised string, bits uint32) {
				p := validProps()
				p.Mode = filetype.Mode(input)
				Expect(p.Validate()).To(Succeed())
				Expect(string(p.Mode)).To(Equal(normalised))
				m, err := filetype.ParseMode(input)
				Expect(err).ToNot(HaveOccurred())
				Expect(uint32(m)).To(Equal(bits))
			},
			Entry(`"0644" is standard octal`, "0644", "0644", uint32(0o644)),
			Entry(`"644" has no leading zero`, "644", "0644", uint32(0o644)),
			Entry(`"0o755" has the 0o prefix`, "0o755", "0755", uint32(0o755)),
			Entry(`"0O700" has the 0O prefix`, "0O700", "0700", uint32(0o700)),
			Entry("0777 is the maximum", "0777", "0777", uint32(0o777)),
			Entry("0 is allowed", "0", "0000", uint32(0)),
		)

		DescribeTable("refuses a mode that is not octal or exceeds 0777",
			func(input, wantMsg string) {
				p := validProps()
				p.Mode = filetype.Mode(input)
				err := p.Validate()
				Expect(err).To(MatchError(resources.ErrInvalid))
				Expect(err.Error()).To(ContainSubstring("property mode"))
				Expect(err.Error()).To(ContainSubstring(wantMsg))
			},
			Entry(`"0888": invalid octal digit`, "0888", `invalid digit '8'`),
			Entry(`"1777": exceeds the maximum (setuid/setgid not supported via mode)`, "1777", "exceeds 0777"),
			Entry(`"rw-r--r--": not octal format`, "rw-r--r--", "is not an octal number"),
			Entry("a bare prefix", "0o", "is not an octal number"),
			Entry("a negative number", "-644", "is not an octal number"),
			Entry("setuid bits", "04755", "exceeds 0777"),
			Entry("a huge number", "77777777777777777777777", "exceeds 0777"),
		)

		It("rejects a number with a message saying to quote it", func() {
			_, err := decodeProps(`{"name":"/etc/motd","owner":"root","group":"root","mode":644}`)
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring(`got the number 644; mode must be a quoted octal string such as "0644"`))
		})

		It("explains that YAML reads an unquoted 0644 as 420", func() {
			var m map[string]any
			Expect(yaml.Unmarshal([]byte("name: /etc/motd\nmode: 0644\n"), &m)).To(Succeed())
			raw, err := json.Marshal(m)
			Expect(err).ToNot(HaveOccurred())
			_, err = decodeProps(string(raw))
			Expect(err).To(MatchError(ContainSubstring("got the number 420")))
			Expect(err).To(MatchError(ContainSubstring("in YAML an unquoted 0644 is read as the number 420")))
		})

		It("decodes a quoted mode and null", func() {
			p, err := decodeProps(`{"name":"/etc/motd","mode":"0o640"}`)
			Expect(err).ToNot(HaveOccurred())
			Expect(p.Mode).To(Equal(filetype.Mode("0o640")))
			p, err = decodeProps(`{"name":"/etc/motd","mode":null}`)
			Expect(err).ToNot(HaveOccurred())
			Expect(p.Mode).To(BeEmpty())
		})

		It("rejects a mode that is neither a string nor a number", func() {
			_, err := decodeProps(`{"name":"/etc/motd","mode":true}`)
			Expect(err).To(MatchError(ContainSubstring(`expected a quoted octal string such as "0644", got true`)))
		})
	})

	Describe("path validation", func() {
		DescribeTable("rejects paths that are not absolute and clean",
			func(name, wantMsg string) {
				p := validProps()
				p.Name = name
				err := p.Validate()
				Expect(err).To(MatchError(resources.ErrInvalid))
				Expect(err.Error()).To(ContainSubstring(wantMsg))
			},
			Entry("relative", "etc/motd", `property name: "etc/motd" is not an absolute path`),
			Entry("dot relative", "./motd", "is not an absolute path"),
			Entry("dot-dot component", "/etc/../motd", `property name: "/etc/../motd" is not a clean path (expected "/motd")`),
			Entry("dot component", "/etc/./motd", "is not a clean path"),
			Entry("trailing slash", "/etc/", "is not a clean path"),
			Entry("double slash", "/etc//motd", "is not a clean path"),
			Entry("NUL byte", "/etc/mo\x00td", "NUL byte"),
		)

		It("accepts an absolute clean path", func() {
			Expect(validProps().Validate()).To(Succeed())
		})

		It("refuses to remove /", func() {
			p := &filetype.Properties{Force: true}
			p.Name, p.Ensure = "/", filetype.EnsureAbsent
			err := p.Validate()
			Expect(err).To(MatchError(resources.ErrInvalid))
			Expect(err).To(MatchError(ContainSubstring("refusing to remove /")))
		})
	})

	Describe("force", func() {
		DescribeTable("is refused with any ensure but absent, naming the property, as CCM refuses it",
			func(ensure string) {
				p := validProps()
				p.Ensure, p.Content, p.Force = ensure, nil, true
				err := p.Validate()
				Expect(err).To(MatchError(resources.ErrInvalid))
				Expect(err).To(MatchError("invalid resource: property force: true is only valid with ensure absent, not " + ensure))
				var ie *resources.InvalidError
				Expect(errors.As(err, &ie)).To(BeTrue())
				Expect(ie.Field).To(Equal("force"))
			},
			Entry("present", "present"),
			Entry("directory", "directory"),
		)

		It("is refused with the default ensure (present)", func() {
			p := validProps()
			p.Force = true
			Expect(p.Validate()).To(MatchError(ContainSubstring("property force: true is only valid with ensure absent, not present")))
		})

		It("is accepted with ensure absent, and false is accepted with any ensure", func() {
			p := &filetype.Properties{Force: true}
			p.Name, p.Ensure = "/srv/old", filetype.EnsureAbsent
			Expect(p.Validate()).To(Succeed())
			for _, ensure := range []string{"present", "directory"} {
				q := validProps()
				q.Ensure = ensure
				Expect(q.Validate()).To(Succeed())
			}
		})
	})

	Describe("ensure", func() {
		DescribeTable("ensure is present, absent or directory",
			func(ensure string, ok bool) {
				p := validProps()
				p.Ensure = ensure
				if ok {
					Expect(p.Validate()).To(Succeed())
				} else {
					Expect(p.Validate()).To(MatchError(ContainSubstring("is not one of present, absent, directory")))
				}
			},
			Entry("present: a regular file", "present", true),
			Entry("absent: nothing at the path", "absent", true),
			Entry("directory: a directory", "directory", true),
			Entry("anything else is invalid", "file", false),
			Entry("latest is a package ensure", "latest", false),
		)

		It("defaults to present", func() {
			p := validProps()
			Expect(p.Validate()).To(Succeed())
			Expect(p.Ensure).To(Equal("present"))
			Expect(filetype.Type{}.DefaultEnsure()).To(Equal("present"))
		})
	})

	Describe("required properties", func() {
		DescribeTable("owner, group and mode are required for present and directory only",
			func(ensure, missing string, ok bool) {
				p := validProps()
				p.Ensure = ensure
				switch missing {
				case "owner":
					p.Owner = ""
				case "group":
					p.Group = ""
				case "mode":
					p.Mode = ""
				}
				if ok {
					Expect(p.Validate()).To(Succeed())
					return
				}
				err := p.Validate()
				Expect(err).To(MatchError(resources.ErrInvalid))
				Expect(err).To(MatchError(ContainSubstring("property " + missing + " is required for ensure " + ensure)))
			},
			Entry("present without owner", "present", "owner", false),
			Entry("present without group", "present", "group", false),
			Entry("present without mode", "present", "mode", false),
			Entry("directory without owner", "directory", "owner", false),
			Entry("directory without group", "directory", "group", false),
			Entry("directory without mode", "directory", "mode", false),
			Entry("absent without owner", "absent", "owner", true),
			Entry("absent without group", "absent", "group", true),
			Entry("absent without mode", "absent", "mode", true),
		)

		It("still checks a mode given with ensure absent", func() {
			p := validProps()
			p.Ensure, p.Mode = "absent", "0999"
			Expect(p.Validate()).To(MatchError(ContainSubstring("property mode")))
		})

		It("rejects owner with surrounding space", func() {
			p := validProps()
			p.Owner = " root"
			Expect(p.Validate()).To(MatchError(ContainSubstring("property owner")))
		})
	})

	Describe("content sources", func() {
		It("takes contents as another spelling of content, and emits content", func() {
			p, err := decodeProps(`{"name":"/etc/motd","contents":"hello\n","owner":"root","group":"root","mode":"644"}`)
			Expect(err).ToNot(HaveOccurred())
			Expect(p.Validate()).To(Succeed())
			Expect(p.Content).To(HaveValue(Equal("hello\n")))
			Expect(p.Contents).To(BeNil())
			out, err := json.Marshal(p)
			Expect(err).ToNot(HaveOccurred())
			Expect(string(out)).To(ContainSubstring(`"content":"hello\n"`))
			Expect(string(out)).ToNot(ContainSubstring(`"contents"`))
			Expect(string(out)).To(ContainSubstring(`"mode":"0644"`))
		})

		It("accepts content and contents when they agree", func() {
			p := validProps()
			p.Content, p.Contents = ptr("x"), ptr("x")
			Expect(p.Validate()).To(Succeed())
			Expect(p.Content).To(HaveValue(Equal("x")))
		})

		It("rejects content and contents that differ", func() {
			p := validProps()
			p.Content, p.Contents = ptr("x"), ptr("y")
			Expect(p.Validate()).To(MatchError(ContainSubstring("content and contents are both set and differ")))
		})

		It("keeps an explicitly empty content as managed", func() {
			p, err := decodeProps(`{"name":"/etc/motd","content":"","owner":"root","group":"root","mode":"0644"}`)
			Expect(err).ToNot(HaveOccurred())
			Expect(p.Validate()).To(Succeed())
			Expect(p.ManagesContent()).To(BeTrue())
		})

		It("manages no content when neither content nor source is given", func() {
			p := validProps()
			Expect(p.Validate()).To(Succeed())
			Expect(p.ManagesContent()).To(BeFalse())
		})

		It("makes content and source mutually exclusive", func() {
			p := validProps()
			p.Content, p.Source = ptr("x"), "files/x"
			err := p.Validate()
			Expect(err).To(MatchError(resources.ErrInvalid))
			Expect(err).To(MatchError(ContainSubstring("property source: content and source are mutually exclusive")))
		})

		It("rejects content for a directory", func() {
			p := validProps()
			p.Ensure, p.Content = "directory", ptr("x")
			Expect(p.Validate()).To(MatchError(ContainSubstring("apply only to ensure present")))
		})

		It("accepts every documented property name and rejects unknown ones", func() {
			_, err := decodeProps(`{"name":"/x","ensure":"present","content":"a","source":"","owner":"root","group":"root","mode":"0644","force":true,"alias":"x","require":["exec#a"]}`)
			Expect(err).ToNot(HaveOccurred())
			_, err = decodeProps(`{"name":"/x","permissions":"0644"}`)
			Expect(err).To(MatchError(ContainSubstring("permissions")))
		})
	})

	Describe("SourcePath", func() {
		It("joins a relative source to the working directory", func() {
			Expect(filetype.SourcePath("files/a.conf", "/srv/manifest")).To(Equal("/srv/manifest/files/a.conf"))
		})

		It("uses an absolute source as is", func() {
			Expect(filetype.SourcePath("/srv/a.conf", "/elsewhere")).To(Equal("/srv/a.conf"))
		})

		It("fails for a relative source without working directory, naming the property", func() {
			_, err := filetype.SourcePath("files/a.conf", "")
			Expect(errors.Is(err, resources.ErrInvalid)).To(BeTrue())
			Expect(err).To(MatchError(ContainSubstring(`property source: "files/a.conf" is a relative path`)))
		})
	})
})
