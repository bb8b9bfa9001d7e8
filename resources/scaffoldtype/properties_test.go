package scaffoldtype_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"

	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/scaffoldtype"
)

func valid() *scaffoldtype.Properties {
	p := &scaffoldtype.Properties{Source: "templates/app"}
	p.Name = "/etc/app"
	return p
}

var _ = Describe("Properties", func() {
	It("defaults ensure to present and engine to jet", func() {
		p := valid()
		Expect(p.Validate()).To(Succeed())
		Expect(p.Ensure).To(Equal("present"))
		Expect(p.Engine).To(Equal("jet"))
		Expect(scaffoldtype.Type{}.DefaultEnsure()).To(Equal("present"))
		Expect(scaffoldtype.Type{}.Name()).To(Equal("scaffold"))
		Expect(scaffoldtype.Type{}.NewProperties()).To(BeAssignableToTypeOf(&scaffoldtype.Properties{}))
	})

	It("decodes its property names (source, engine, skip_empty, delimiters, purge, post) strictly", func() {
		raw := `{"name":"/etc/app","ensure":"present","source":"templates/app","engine":"go",
			"skip_empty":true,"left_delimiter":"<<","right_delimiter":">>","purge":true,
			"post":[{"*.sh":"chmod +x {}"}]}`
		dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
		dec.DisallowUnknownFields()
		p := &scaffoldtype.Properties{}
		Expect(dec.Decode(p)).To(Succeed())
		Expect(p.Validate()).To(Succeed())
		Expect(*p).To(MatchFields(IgnoreExtras, Fields{
			"Source": Equal("templates/app"), "Engine": Equal("go"), "SkipEmpty": BeTrue(),
			"LeftDelimiter": Equal("<<"), "RightDelimiter": Equal(">>"), "Purge": BeTrue(),
			"Post": Equal([]map[string]string{{"*.sh": "chmod +x {}"}}),
		}))

		dec = json.NewDecoder(bytes.NewReader([]byte(`{"name":"/etc/app","source":"x","template":"y"}`)))
		dec.DisallowUnknownFields()
		Expect(dec.Decode(&scaffoldtype.Properties{})).To(MatchError(ContainSubstring(`unknown field "template"`)))
	})

	DescribeTable("validation",
		func(mod func(*scaffoldtype.Properties), wantErr string) {
			p := valid()
			mod(p)
			err := p.Validate()
			if wantErr == "" {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(err).To(MatchError(resources.ErrInvalid))
			Expect(err).To(MatchError(ContainSubstring(wantErr)))
		},
		Entry("minimal", func(*scaffoldtype.Properties) {}, ""),
		Entry("ensure absent", func(p *scaffoldtype.Properties) { p.Ensure = "absent" }, ""),
		Entry("ensure running", func(p *scaffoldtype.Properties) { p.Ensure = "running" }, `property ensure: "running" is not one of present or absent`),
		Entry("missing name", func(p *scaffoldtype.Properties) { p.Name = "" }, "property name is required"),
		Entry("relative name", func(p *scaffoldtype.Properties) { p.Name = "etc/app" }, `property name: "etc/app" is not an absolute path`),
		Entry("name with ..", func(p *scaffoldtype.Properties) { p.Name = "/etc/../app" }, `property name: "/etc/../app" is not canonical`),
		Entry("name with .", func(p *scaffoldtype.Properties) { p.Name = "/etc/./app" }, "is not canonical"),
		Entry("name with trailing slash", func(p *scaffoldtype.Properties) { p.Name = "/etc/app/" }, "is not canonical"),
		Entry("name with double slash", func(p *scaffoldtype.Properties) { p.Name = "/etc//app" }, "is not canonical"),
		Entry("root as name", func(p *scaffoldtype.Properties) { p.Name = "/" }, "the root directory cannot be a scaffold target"),
		Entry("missing source", func(p *scaffoldtype.Properties) { p.Source = "" }, "property source is required"),
		Entry("absolute source", func(p *scaffoldtype.Properties) { p.Source = "/srv/templates" }, ""),
		Entry("URL source", func(p *scaffoldtype.Properties) { p.Source = "https://example.net/t.tgz" }, ""),
		Entry("engine go", func(p *scaffoldtype.Properties) { p.Engine = "go" }, ""),
		Entry("engine jet", func(p *scaffoldtype.Properties) { p.Engine = "jet" }, ""),
		Entry("engine erb", func(p *scaffoldtype.Properties) { p.Engine = "erb" }, `property engine: "erb" is not one of go or jet`),
		Entry("both delimiters", func(p *scaffoldtype.Properties) { p.LeftDelimiter, p.RightDelimiter = "<<", ">>" }, ""),
		Entry("only left_delimiter", func(p *scaffoldtype.Properties) { p.LeftDelimiter = "<<" }, "left_delimiter and right_delimiter must be set together"),
		Entry("only right_delimiter", func(p *scaffoldtype.Properties) { p.RightDelimiter = ">>" }, "left_delimiter and right_delimiter must be set together"),
		Entry("post glob and command", func(p *scaffoldtype.Properties) {
			p.Post = []map[string]string{{"*.go": "go fmt {}"}, {"*.sh": "chmod +x {}"}}
		}, ""),
		Entry("post with empty glob", func(p *scaffoldtype.Properties) { p.Post = []map[string]string{{"": "chmod +x {}"}} }, "property post: entry 1 has an empty glob"),
		Entry("post with empty command", func(p *scaffoldtype.Properties) { p.Post = []map[string]string{{"*.sh": " "}} }, `property post: entry 1 ("*.sh") has an empty command`),
		Entry("post entry with two globs", func(p *scaffoldtype.Properties) {
			p.Post = []map[string]string{{"*.sh": "chmod +x {}", "*.go": "go fmt {}"}}
		}, "entry 1 must map exactly one glob to one command, it has 2"),
		Entry("post entry with no glob", func(p *scaffoldtype.Properties) { p.Post = []map[string]string{{}} }, "it has 0"),
		Entry("post glob that is malformed", func(p *scaffoldtype.Properties) { p.Post = []map[string]string{{"[a-": "true"}} }, `property post: glob "[a-"`),
		Entry("post glob with a directory", func(p *scaffoldtype.Properties) { p.Post = []map[string]string{{"bin/*.sh": "true"}} }, "globs match file base names"),
		Entry("post command with an open quote", func(p *scaffoldtype.Properties) { p.Post = []map[string]string{{"*.sh": "chmod '+x {}"}} }, `property post: command "chmod '+x {}"`),
		Entry("bad require reference", func(p *scaffoldtype.Properties) { p.Require = []string{"nohash"} }, "property require"),
	)

	DescribeTable("source resolution",
		func(source, workingDir, want string) {
			Expect(scaffoldtype.ResolveSource(source, workingDir)).To(Equal(want))
		},
		Entry("relative joins the working directory", "templates/app", "/srv/manifests", "/srv/manifests/templates/app"),
		Entry("absolute is unchanged", "/opt/templates", "/srv/manifests", "/opt/templates"),
		Entry("URL is unchanged", "https://example.net/app.tgz", "/srv/manifests", "https://example.net/app.tgz"),
		Entry("file URL is unchanged", "file:///opt/templates", "/srv/manifests", "file:///opt/templates"),
	)

	It("resolves a relative source against the process directory without a working directory", func() {
		wd, err := os.Getwd()
		Expect(err).NotTo(HaveOccurred())
		Expect(scaffoldtype.ResolveSource("templates/app", "")).To(Equal(filepath.Join(wd, "templates/app")))
	})

	It("tells URLs from paths", func() {
		Expect(scaffoldtype.IsURL("https://example.net/x")).To(BeTrue())
		Expect(scaffoldtype.IsURL("/opt/x")).To(BeFalse())
		Expect(scaffoldtype.IsURL("templates/x")).To(BeFalse())
	})
})
