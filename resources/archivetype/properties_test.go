package archivetype_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/archivetype"
)

const sum64 = "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"

func validProps() *archivetype.Properties {
	p := &archivetype.Properties{
		URL:   "https://example.com/releases/app.tar.gz",
		Owner: "root",
		Group: "root",
	}
	p.Name = "/tmp/app.tar.gz"
	return p
}

var _ = Describe("Properties", func() {
	Describe("Validate", func() {
		DescribeTable("validation rules",
			func(mutate func(p *archivetype.Properties), wantErr string) {
				p := validProps()
				mutate(p)
				err := p.Validate()
				if wantErr == "" {
					Expect(err).NotTo(HaveOccurred())
					return
				}
				Expect(err).To(MatchError(resources.ErrInvalid))
				Expect(err.Error()).To(ContainSubstring(wantErr))
			},
			Entry("minimal valid resource", func(p *archivetype.Properties) {}, ""),
			Entry("ensure absent", func(p *archivetype.Properties) { p.Ensure = "absent" }, ""),
			Entry("ensure not present/absent", func(p *archivetype.Properties) { p.Ensure = "latest" }, `property ensure: "latest" is not one of present, absent`),
			Entry("name missing", func(p *archivetype.Properties) { p.Name = "" }, "property name is required"),
			Entry("name relative", func(p *archivetype.Properties) { p.Name = "tmp/app.tar.gz" }, "property name: \"tmp/app.tar.gz\" is not an absolute path"),
			Entry("name not clean", func(p *archivetype.Properties) { p.Name = "/tmp/../tmp/app.tar.gz" }, "is not a clean path"),
			Entry("name without archive extension", func(p *archivetype.Properties) { p.Name = "/tmp/app.rar" }, "property name: \"/tmp/app.rar\" does not end in a supported archive extension"),
			Entry("name .tgz matches url .tar.gz", func(p *archivetype.Properties) { p.Name = "/tmp/app.tgz" }, ""),
			Entry("url .tgz matches name .tar.gz", func(p *archivetype.Properties) { p.URL = "https://example.com/app.tgz" }, ""),
			Entry("tar archives", func(p *archivetype.Properties) { p.Name, p.URL = "/tmp/a.tar", "http://example.com/a.tar" }, ""),
			Entry("zip archives", func(p *archivetype.Properties) { p.Name, p.URL = "/tmp/a.zip", "http://example.com/a.zip?token=1" }, ""),
			Entry("upper-case extension", func(p *archivetype.Properties) { p.Name, p.URL = "/tmp/A.ZIP", "http://example.com/a.zip" }, ""),
			Entry("url missing", func(p *archivetype.Properties) { p.URL = "" }, "property url is required"),
			Entry("url not parseable", func(p *archivetype.Properties) { p.URL = "http://[::1/app.tar.gz" }, "property url: http://[::1/app.tar.gz is not a valid URL"),
			Entry("url scheme ftp", func(p *archivetype.Properties) { p.URL = "ftp://example.com/app.tar.gz" }, `property url: scheme "ftp" is not http or https`),
			Entry("url without host", func(p *archivetype.Properties) { p.URL = "http:///app.tar.gz" }, "has no host"),
			Entry("url path without extension", func(p *archivetype.Properties) { p.URL = "https://example.com/download?f=app.tar.gz" }, `property url: path "/download" does not end in a supported archive extension`),
			Entry("url and name of different types", func(p *archivetype.Properties) { p.URL = "https://example.com/app.zip" }, "property url: archive type zip does not match the name's archive type tar.gz"),
			Entry("tar vs tar.gz differ", func(p *archivetype.Properties) { p.URL = "https://example.com/app.tar" }, "archive type tar does not match the name's archive type tar.gz"),
			Entry("checksum upper-case hex", func(p *archivetype.Properties) { p.Checksum = sum64 }, ""),
			Entry("checksum too short", func(p *archivetype.Properties) { p.Checksum = "abc" }, `property checksum: "abc" is not a SHA-256 hex digest`),
			Entry("checksum not hex", func(p *archivetype.Properties) { p.Checksum = strings.Repeat("g", 64) }, "is not a SHA-256 hex digest"),
			Entry("extract_parent relative", func(p *archivetype.Properties) { p.ExtractParent = "opt/app" }, `property extract_parent: "opt/app" is not an absolute path`),
			Entry("extract_parent not clean", func(p *archivetype.Properties) { p.ExtractParent = "/opt/app/" }, "property extract_parent: \"/opt/app/\" is not a clean path"),
			Entry("creates relative", func(p *archivetype.Properties) { p.Creates = "bin/app" }, `property creates: "bin/app" is not an absolute path`),
			Entry("creates not clean", func(p *archivetype.Properties) { p.Creates = "/opt//app" }, "property creates: \"/opt//app\" is not a clean path"),
			Entry("cleanup with extract_parent and creates", func(p *archivetype.Properties) {
				p.Cleanup, p.ExtractParent, p.Creates = true, "/opt/app", "/opt/app/bin/app"
			}, ""),
			Entry("cleanup without extract_parent", func(p *archivetype.Properties) { p.Cleanup, p.Creates = true, "/opt/app/bin/app" }, "property cleanup: requires extract_parent and creates"),
			Entry("cleanup without creates", func(p *archivetype.Properties) { p.Cleanup, p.ExtractParent = true, "/opt/app" }, "property cleanup: requires extract_parent and creates"),
			Entry("owner missing", func(p *archivetype.Properties) { p.Owner = "" }, "property owner is required"),
			Entry("group missing", func(p *archivetype.Properties) { p.Group = "" }, "property group is required"),
			Entry("owner with a colon", func(p *archivetype.Properties) { p.Owner = "root:root" }, `property owner: "root:root" is not a valid name`),
			Entry("numeric owner and group", func(p *archivetype.Properties) { p.Owner, p.Group = "0", "0" }, ""),
			Entry("basic auth", func(p *archivetype.Properties) { p.Username, p.Password = "deploy", "s3cret" }, ""),
			Entry("password without username", func(p *archivetype.Properties) { p.Password = "s3cret" }, "property password: requires username"),
			Entry("username with a colon", func(p *archivetype.Properties) { p.Username = "a:b" }, "property username: must be"),
			Entry("username and url credentials", func(p *archivetype.Properties) {
				p.Username, p.URL = "deploy", "https://u:p@example.com/app.tar.gz"
			}, "property username: the url already carries credentials"),
			Entry("headers", func(p *archivetype.Properties) { p.Headers = map[string]string{"Authorization": "Bearer x"} }, ""),
			Entry("bad header name", func(p *archivetype.Properties) { p.Headers = map[string]string{"Bad Header": "x"} }, `property headers: "Bad Header" is not a valid header name`),
			Entry("header value with CRLF", func(p *archivetype.Properties) { p.Headers = map[string]string{"X-Token": "a\r\nEvil: 1"} }, `property headers: the value of "X-Token" contains control characters`),
			Entry("bad common reference", func(p *archivetype.Properties) { p.Require = []string{"nope"} }, "property require"),
		)

		It("defaults ensure to present and lower-cases the checksum", func() {
			p := validProps()
			p.Checksum = sum64
			Expect(p.Validate()).To(Succeed())
			Expect(p.Ensure).To(Equal(archivetype.EnsurePresent))
			Expect(p.Checksum).To(Equal(strings.ToLower(sum64)))
		})

		It("never quotes URL credentials in its errors", func() {
			p := validProps()
			p.URL = "ftp://deploy:hunter2@example.com/app.tar.gz"
			Expect(p.Validate()).To(MatchError(ContainSubstring("scheme")))
			p.URL = "https://deploy:hunter2@example.com/app.zip"
			err := p.Validate()
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).NotTo(ContainSubstring("hunter2"))
			p.URL = "http://deploy:hunter2@[::1/app.tar.gz"
			err = p.Validate()
			Expect(err).To(MatchError(ContainSubstring("is not a valid URL")))
			Expect(err.Error()).NotTo(ContainSubstring("hunter2"))
		})

		It("decodes its property names (url, checksum, extract_parent, creates, cleanup, credentials, headers) strictly", func() {
			raw := `{"name":"/tmp/app.tar.gz","url":"https://example.com/app.tar.gz","checksum":"` + sum64 + `",
				"extract_parent":"/opt/app","creates":"/opt/app/bin/app","cleanup":true,"owner":"root","group":"root",
				"username":"deploy","password":"pw","headers":{"X-A":"b"}}`
			dec := json.NewDecoder(strings.NewReader(raw))
			dec.DisallowUnknownFields()
			p := archivetype.Type{}.NewProperties().(*archivetype.Properties)
			Expect(dec.Decode(p)).To(Succeed())
			Expect(p.Validate()).To(Succeed())
			Expect(p.ExtractParent).To(Equal("/opt/app"))
			Expect(p.Headers).To(HaveKeyWithValue("X-A", "b"))
		})
	})

	Describe("Redacted", func() {
		It("replaces the password, header values and URL userinfo in a copy", func() {
			p := validProps()
			p.URL = "https://deploy:hunter2@example.com/app.tar.gz?x=1"
			p.Username, p.Password = "deploy", "s3cret"
			p.Headers = map[string]string{"Authorization": "Bearer tok3n"}

			r, ok := p.Redacted().(*archivetype.Properties)
			Expect(ok).To(BeTrue())
			Expect(r.Password).To(Equal("[redacted]"))
			Expect(r.Headers).To(Equal(map[string]string{"Authorization": "[redacted]"}))
			Expect(r.URL).To(Equal("https://[redacted]@example.com/app.tar.gz?x=1"))
			Expect(r.Username).To(Equal("deploy"))

			js, err := json.Marshal(r)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(js)).NotTo(SatisfyAny(ContainSubstring("s3cret"), ContainSubstring("tok3n"), ContainSubstring("hunter2")))

			Expect(p.Password).To(Equal("s3cret"))
			Expect(p.Headers["Authorization"]).To(Equal("Bearer tok3n"))
			Expect(p.URL).To(ContainSubstring("hunter2"))
		})

		It("leaves an empty password and nil headers alone", func() {
			r := validProps().Redacted().(*archivetype.Properties)
			Expect(r.Password).To(BeEmpty())
			Expect(r.Headers).To(BeNil())
			Expect(r.URL).To(Equal("https://example.com/releases/app.tar.gz"))
		})

		It("keeps credentials out of slog and fmt output", func() {
			p := validProps()
			p.URL = "https://deploy:hunter2@example.com/app.tar.gz"
			p.Password = "s3cret"
			p.Headers = map[string]string{"X-Token": "tok3n"}
			var buf strings.Builder
			slog.New(slog.NewJSONHandler(&buf, nil)).Info("applying", "props", p)
			slog.New(slog.NewJSONHandler(&buf, nil)).Info("applying", "props", *p)
			out := buf.String() + fmt.Sprintf("%v %s %+v", p, p, *p)
			Expect(out).To(ContainSubstring("X-Token"))
			Expect(out).NotTo(SatisfyAny(ContainSubstring("s3cret"), ContainSubstring("tok3n"), ContainSubstring("hunter2")))
		})
	})

	DescribeTable("RedactURL",
		func(in, want string) { Expect(archivetype.RedactURL(in)).To(Equal(want)) },
		Entry("no userinfo", "http://example.com/a.zip", "http://example.com/a.zip"),
		Entry("user and password", "http://u:p@example.com/a.zip", "http://[redacted]@example.com/a.zip"),
		Entry("user only", "https://u@example.com:8443/a.zip", "https://[redacted]@example.com:8443/a.zip"),
		Entry("unparseable with @", "http://u:p@[::1/a.zip", "[redacted]"),
	)

	DescribeTable("FormatOf (supported archive formats)",
		func(name string, want archivetype.Format, ok bool) {
			f, found := archivetype.FormatOf(name)
			Expect(found).To(Equal(ok))
			Expect(f).To(Equal(want))
		},
		Entry(".tar.gz is gzip-compressed tar", "/x/a.tar.gz", archivetype.FormatTarGz, true),
		Entry(".tgz is gzip-compressed tar", "/x/a.tgz", archivetype.FormatTarGz, true),
		Entry(".tar is uncompressed tar", "/x/a.tar", archivetype.FormatTar, true),
		Entry(".zip is ZIP", "/x/a.zip", archivetype.FormatZip, true),
		Entry("upper case", "/x/A.TGZ", archivetype.FormatTarGz, true),
		Entry(".gz alone is not supported", "/x/a.gz", archivetype.Format(""), false),
		Entry("a bare extension is not a name", "/x/.zip", archivetype.Format(""), false),
	)
})
