package servicetype_test

import (
	"bytes"
	"encoding/json"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/servicetype"
)

// decode mimics the engine: strict JSON into the type's properties.
func decode(doc string) (*servicetype.Properties, error) {
	props := servicetype.Type{}.NewProperties()
	dec := json.NewDecoder(bytes.NewReader([]byte(doc)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(props); err != nil {
		return nil, err
	}
	return props.(*servicetype.Properties), nil
}

func valid(name string) *servicetype.Properties {
	return &servicetype.Properties{CommonProperties: resources.CommonProperties{Name: name, Ensure: "running"}}
}

var _ = Describe("Type", func() {
	It("is the service type, ensuring running by default", func() {
		t := servicetype.Type{}
		Expect(t.Name()).To(Equal("service"))
		Expect(t.DefaultEnsure()).To(Equal("running"))
		Expect(t.NewProperties()).To(BeAssignableToTypeOf(&servicetype.Properties{}))
	})
})

var _ = Describe("Properties", func() {
	Describe("the enable property", func() {
		DescribeTable("decodes to a tri-state *bool",
			func(doc string, want *bool) {
				p, err := decode(doc)
				Expect(err).ToNot(HaveOccurred())
				if want == nil {
					Expect(p.Enable).To(BeNil())
				} else {
					Expect(p.Enable).To(HaveValue(Equal(*want)))
				}
			},
			Entry("true: enable at boot", `{"name":"myapp","enable":true}`, new(true)),
			Entry("false: disable at boot", `{"name":"myapp","enable":false}`, new(false)),
			Entry("not set: leave boot configuration alone", `{"name":"myapp"}`, nil),
			Entry("null: leave boot configuration alone", `{"name":"myapp","enable":null}`, nil),
		)

		DescribeTable("rejects what is not a property or not a boolean",
			func(doc string) {
				_, err := decode(doc)
				Expect(err).To(HaveOccurred())
			},
			Entry("enabled is not a property", `{"name":"myapp","enabled":true}`),
			Entry("a string is not a boolean", `{"name":"myapp","enable":"yes"}`),
			Entry("a number is not a boolean", `{"name":"myapp","enable":1}`),
		)
	})

	Describe("ensure", func() {
		It("defaults to running", func() {
			p := &servicetype.Properties{CommonProperties: resources.CommonProperties{Name: "httpd"}}
			Expect(p.Validate()).To(Succeed())
			Expect(p.Ensure).To(Equal("running"))
		})

		DescribeTable("Ensure States",
			func(ensure string, ok bool) {
				p := valid("httpd")
				p.Ensure = ensure
				err := p.Validate()
				if ok {
					Expect(err).ToNot(HaveOccurred())
					return
				}
				Expect(err).To(MatchError(resources.ErrInvalid))
				Expect(err.Error()).To(ContainSubstring("property ensure"))
			},
			Entry("running: service must be running", "running", true),
			Entry("stopped: service must be stopped", "stopped", true),
			Entry("present is a package word", "present", false),
			Entry("absent is a package word", "absent", false),
			Entry("values are case sensitive", "Running", false),
		)
	})

	It("checks the common properties", func() {
		p := valid("httpd")
		p.Subscribe = []string{"not a reference"}
		Expect(p.Validate()).To(MatchError(resources.ErrInvalid))
	})

	Describe("service name validation", func() {
		DescribeTable("Examples",
			func(name string, ok bool) {
				err := valid(name).Validate()
				if ok {
					Expect(err).ToNot(HaveOccurred())
					return
				}
				Expect(err).To(MatchError(resources.ErrInvalid))
				Expect(err.Error()).To(ContainSubstring("property name"))
			},
			Entry("httpd", "httpd", true),
			Entry("nginx.service", "nginx.service", true),
			Entry("my-app_v2", "my-app_v2", true),
			Entry("app@instance: @ not allowed", "app@instance", false),
			Entry("app; rm -rf /: shell metacharacters", "app; rm -rf /", false),
		)

		DescribeTable("Allowed Characters",
			func(name string) {
				Expect(valid(name).Validate()).To(Succeed())
				Expect(servicetype.ValidateName(name)).To(Succeed())
			},
			Entry("alphanumeric", "aZ09"),
			Entry("period", "a.b"),
			Entry("underscore", "a_b"),
			Entry("plus", "a+b"),
			Entry("colon", "a:b"),
			Entry("tilde", "a~b"),
			Entry("hyphen inside", "a-b"),
			Entry("hyphen at the end", "a-"),
			Entry("every allowed class at once", "Sys.tem_d+1:2~3-x"),
		)

		DescribeTable("Rejected",
			func(name, why string) {
				err := servicetype.ValidateName(name)
				Expect(err).To(MatchError(resources.ErrInvalid))
				Expect(err.Error()).To(ContainSubstring(why))
			},
			Entry("empty", "", "required"),
			Entry("leading hyphen: read as an option", "-httpd", "must not start with '-'"),
			Entry("leading double hyphen", "--now", "must not start with '-'"),
			Entry("semicolon", "a;b", "dangerous characters"),
			Entry("pipe", "a|b", "dangerous characters"),
			Entry("ampersand", "a&b", "dangerous characters"),
			Entry("dollar", "a$b", "dangerous characters"),
			Entry("backtick", "a`b", "dangerous characters"),
			Entry("redirection", "a>b", "dangerous characters"),
			Entry("glob", "a*", "dangerous characters"),
			Entry("at sign", "getty@tty1", "dangerous characters"),
			Entry("backslash", `a\x2db`, "dangerous characters"),
			Entry("slash: path separator", "../etc/passwd", "dangerous characters"),
			Entry("absolute path", "/etc/systemd/system/x.service", "dangerous characters"),
			Entry("space", "a b", "dangerous characters"),
			Entry("tab", "a\tb", "dangerous characters"),
			Entry("newline", "a\nb", "dangerous characters"),
			Entry("carriage return", "a\rb", "dangerous characters"),
			Entry("NUL byte", "a\x00b", "dangerous characters"),
			Entry("non-breaking space", "a\u00a0b", "dangerous characters"),
			Entry("non-ASCII letter", "ñginx", "dangerous characters"),
			Entry("zero-width space", "nginx\u200b", "dangerous characters"),
			Entry("fullwidth semicolon", "a\uff1bb", "dangerous characters"),
		)

		It("accepts 256 bytes and rejects 257", func() {
			Expect(valid(strings.Repeat("a", 256)).Validate()).To(Succeed())
			err := valid(strings.Repeat("a", 257)).Validate()
			Expect(err).To(MatchError(resources.ErrInvalid))
			Expect(err.Error()).To(ContainSubstring("longer than 256 bytes"))
		})
	})
})
