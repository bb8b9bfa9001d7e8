package resources_test

import (
	"encoding/json"
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/applytype"
	"github.com/ccm-fleet/ccm/resources/archivetype"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/exectype"
	"github.com/ccm-fleet/ccm/resources/filetype"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
	"github.com/ccm-fleet/ccm/resources/scaffoldtype"
	"github.com/ccm-fleet/ccm/resources/servicetype"
)

// invalidOf validates the properties raw decodes to in p and returns the
// *InvalidError it fails with.
func invalidOf(p resources.Properties, raw string) *resources.InvalidError {
	GinkgoHelper()
	Expect(json.Unmarshal([]byte(raw), p)).To(Succeed())
	err := p.Validate()
	var ie *resources.InvalidError
	Expect(errors.As(err, &ie)).To(BeTrue(), "%v", err)
	return ie
}

var _ = Describe("InvalidError", func() {
	It("names the property at fault and the reason, in the words Invalidf gave", func() {
		ie := resources.InvalidField("mode", "%q is not an octal number", "0888").(*resources.InvalidError)
		Expect(ie.Error()).To(Equal(`invalid resource: property mode: "0888" is not an octal number`))
		Expect(ie.Field).To(Equal("mode"))
		Expect(ie.Reason).To(Equal(`"0888" is not an octal number`))
		Expect(errors.Is(ie, resources.ErrInvalid)).To(BeTrue())

		ie = resources.InvalidFieldPredicate("name", "is required").(*resources.InvalidError)
		Expect(ie.Error()).To(Equal("invalid resource: property name is required"))
		Expect(ie.Field).To(Equal("name"))
		Expect(ie.Reason).To(Equal("is required"))

		ie = resources.Invalidf("properties a and b must be set together").(*resources.InvalidError)
		Expect(ie.Field).To(BeEmpty())
		Expect(ie.Reason).To(Equal(ie.Problem))
	})

	DescribeTable("each type's validation names the property at fault",
		func(p resources.Properties, raw, field, problem string) {
			ie := invalidOf(p, raw)
			Expect(ie.Field).To(Equal(field))
			Expect(ie.Problem).To(Equal(problem))
		},
		Entry("common name", &pkgtype.Properties{}, `{}`, "name", "property name is required"),
		Entry("common ensure", &servicetype.Properties{}, `{"name":"x","ensure":"a b"}`, "ensure", `property ensure "a b" contains characters that are not allowed`),
		Entry("common require", &pkgtype.Properties{}, `{"name":"x","require":["nope"]}`, "require", `property require: "nope" is not a type#name reference`),
		Entry("file mode", &filetype.Properties{}, `{"name":"/x","mode":"0888","owner":"root","group":"root"}`, "mode", `property mode: "0888" is not an octal number: invalid digit '8'`),
		Entry("file name", &filetype.Properties{}, `{"name":"relative"}`, "name", `property name: "relative" is not an absolute path`),
		Entry("file owner", &filetype.Properties{}, `{"name":"/x","mode":"0644","group":"root"}`, "owner", "property owner is required for ensure present"),
		Entry("file content", &filetype.Properties{}, `{"name":"/x","ensure":"directory","content":"x","owner":"root","group":"root","mode":"0755"}`, "content", "property content: content and source apply only to ensure present, not directory"),
		Entry("package name", &pkgtype.Properties{}, `{"name":"_x"}`, "name", `property name: package name "_x" does not start with a letter or digit`),
		Entry("service ensure", &servicetype.Properties{}, `{"name":"x","ensure":"gone"}`, "ensure", `property ensure: "gone" is not one of running, stopped`),
		Entry("exec timeout", &exectype.Properties{}, `{"name":"/bin/true","timeout":"soon"}`, "timeout", `property timeout: "soon" is not a duration such as 30s or 5m`),
		Entry("exec returns", &exectype.Properties{}, `{"name":"/bin/true","returns":[300]}`, "returns", "property returns: 300 is not an exit code (0-255)"),
		Entry("apply ensure", &applytype.Properties{}, `{"name":"/m.yaml","ensure":"absent"}`, "ensure", `property ensure: "absent" is not present, the only ensure value of apply`),
		Entry("archive url", &archivetype.Properties{}, `{"name":"/x.tar.gz","url":"ftp://h/x.tar.gz","owner":"root","group":"root"}`, "url", `property url: scheme "ftp" is not http or https`),
		Entry("scaffold source", &scaffoldtype.Properties{}, `{"name":"/x"}`, "source", "property source is required"),
		Entry("scaffold engine", &scaffoldtype.Properties{}, `{"name":"/x","source":"/s","engine":"m4"}`, "engine", `property engine: "m4" is not one of go or jet`),
	)

	It("leaves the field empty for a problem of two properties together", func() {
		ie := invalidOf(&scaffoldtype.Properties{}, `{"name":"/x","source":"/s","left_delimiter":"<<"}`)
		Expect(ie.Field).To(BeEmpty())
		Expect(ie.Problem).To(Equal("properties left_delimiter and right_delimiter must be set together"))
	})

	It("names the property a decoder refused, as the decoder located it", func() {
		_, err := engine.DecodeJSON(filetype.Type{}, []byte(`{"name":"/x","mode":644}`))
		var ie *resources.InvalidError
		Expect(errors.As(err, &ie)).To(BeTrue(), "%v", err)
		Expect(ie.Field).To(Equal("mode"))
		Expect(ie.Problem).To(HavePrefix(`property "mode": `))

		_, err = engine.DecodeJSON(filetype.Type{}, []byte(`{"name":"/x","colour":"red"}`))
		Expect(errors.As(err, &ie)).To(BeTrue(), "%v", err)
		Expect(ie.Field).To(Equal("colour"))
		Expect(ie.Problem).To(Equal(`unknown property "colour"`))
	})
})
