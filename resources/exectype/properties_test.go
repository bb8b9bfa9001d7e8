package exectype_test

import (
	"bytes"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/exectype"
)

// decode decodes raw the way the engine does: strictly, unknown properties rejected.
func decode(raw string) (*exectype.Properties, error) {
	p := &exectype.Properties{}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	return p, dec.Decode(p)
}

var _ = Describe("Properties", func() {
	valid := func() *exectype.Properties {
		return &exectype.Properties{CommonProperties: resources.CommonProperties{Name: "/bin/true"}}
	}

	// name, command, onlyif and unless must split into words (balanced
	// quotes, no trailing backslash, not blank); timeout is a positive
	// duration with a unit; subscribe lists type#name; path lists absolute
	// directories, none empty; environment entries are KEY=VALUE, neither
	// empty; returns are exit codes 0 to 255; cwd and creates are absolute;
	// ensure is always present.
	DescribeTable("Validate",
		func(mutate func(*exectype.Properties), wantErr string) {
			p := valid()
			mutate(p)
			err := p.Validate()
			if wantErr == "" {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(err).To(MatchError(resources.ErrInvalid))
			Expect(err).To(MatchError(ContainSubstring(wantErr)))
		},
		Entry("a plain command is valid", func(*exectype.Properties) {}, ""),
		Entry("name with balanced quotes is valid",
			func(p *exectype.Properties) { p.Name = `/bin/echo "it's a test" 'x y'` }, ""),
		Entry("name with an unterminated single quote",
			func(p *exectype.Properties) { p.Name = "/bin/echo 'hello" }, "property name: Unterminated single-quoted string"),
		Entry("name with an unterminated double quote",
			func(p *exectype.Properties) { p.Name = `/bin/echo "hello` }, "property name: Unterminated double-quoted string"),
		Entry("name ending in a backslash",
			func(p *exectype.Properties) { p.Name = `/bin/echo hello\` }, "property name: Unterminated backslash-escape"),
		Entry("name of blanks only",
			func(p *exectype.Properties) { p.Name = "   " }, "property name: no command specified"),
		Entry("missing name",
			func(p *exectype.Properties) { p.Name = "" }, "property name is required"),
		Entry("command with an unterminated single quote",
			func(p *exectype.Properties) { p.Command = "/bin/echo 'oops" }, "property command: Unterminated single-quoted string"),
		Entry("onlyif with an unterminated quote",
			func(p *exectype.Properties) { p.OnlyIf = `/usr/bin/test -f "x` }, "property onlyif: Unterminated double-quoted string"),
		Entry("unless with an unterminated quote",
			func(p *exectype.Properties) { p.Unless = `/usr/bin/test -f 'x` }, "property unless: Unterminated single-quoted string"),
		Entry("timeout 30s is valid", func(p *exectype.Properties) { p.Timeout = "30s" }, ""),
		Entry("timeout 5m is valid", func(p *exectype.Properties) { p.Timeout = "5m" }, ""),
		Entry("timeout that is not a duration",
			func(p *exectype.Properties) { p.Timeout = "soon" }, `property timeout: "soon" is not a duration`),
		Entry("timeout without a unit",
			func(p *exectype.Properties) { p.Timeout = "30" }, `property timeout: "30" is not a duration`),
		Entry("timeout of zero",
			func(p *exectype.Properties) { p.Timeout = "0s" }, `property timeout: "0s" must be longer than zero`),
		Entry("negative timeout",
			func(p *exectype.Properties) { p.Timeout = "-5s" }, `property timeout: "-5s" must be longer than zero`),
		Entry("subscribe in type#name format is valid",
			func(p *exectype.Properties) { p.Subscribe = []string{"file#/etc/app.conf"} }, ""),
		Entry("subscribe without #",
			func(p *exectype.Properties) { p.Subscribe = []string{"file"} }, `property subscribe: "file" is not a type#name reference`),
		Entry("absolute path directories are valid",
			func(p *exectype.Properties) { p.Path = "/usr/local/bin:/usr/bin:/bin" }, ""),
		Entry("relative path directory",
			func(p *exectype.Properties) { p.Path = "/usr/bin:bin" }, `property path: "bin" is not an absolute directory`),
		Entry("empty path directory",
			func(p *exectype.Properties) { p.Path = "/usr/bin::/bin" }, `property path: "/usr/bin::/bin" has an empty directory`),
		Entry("environment KEY=VALUE is valid",
			func(p *exectype.Properties) { p.Environment = []string{"CC=gcc", "CFLAGS=-O2 -g", "A=b=c"} }, ""),
		Entry("environment without =",
			func(p *exectype.Properties) { p.Environment = []string{"CC"} }, `property environment: "CC" is not KEY=VALUE`),
		Entry("environment with an empty key",
			func(p *exectype.Properties) { p.Environment = []string{"=gcc"} }, `property environment: "=gcc" has an empty key`),
		Entry("environment with an empty value",
			func(p *exectype.Properties) { p.Environment = []string{"CC="} }, `property environment: "CC=" has an empty value`),
		Entry("returns of exit codes is valid",
			func(p *exectype.Properties) { p.Returns = []int{0, 1, 255} }, ""),
		Entry("returns beyond 255",
			func(p *exectype.Properties) { p.Returns = []int{0, 256} }, "property returns: 256 is not an exit code"),
		Entry("negative returns",
			func(p *exectype.Properties) { p.Returns = []int{-1} }, "property returns: -1 is not an exit code"),
		Entry("relative cwd",
			func(p *exectype.Properties) { p.Cwd = "opt/app" }, `property cwd: "opt/app" is not an absolute path`),
		Entry("relative creates",
			func(p *exectype.Properties) { p.Creates = "flag" }, `property creates: "flag" is not an absolute path`),
		Entry("ensure other than present",
			func(p *exectype.Properties) { p.Ensure = "absent" }, `property ensure: exec resources are always "present", not "absent"`),
	)

	It("sets the defaults: ensure present, command from name, returns [0]", func() {
		p := &exectype.Properties{CommonProperties: resources.CommonProperties{Name: "/usr/bin/myapp --config /etc/myapp.conf"}}
		Expect(p.Validate()).To(Succeed())
		Expect(p.Ensure).To(Equal("present"))
		Expect(p.Command).To(Equal("/usr/bin/myapp --config /etc/myapp.conf"))
		Expect(p.Returns).To(Equal([]int{0}))
		Expect(p.CommandLine()).To(Equal(p.Name))
	})

	It("keeps an explicit command and returns", func() {
		p := &exectype.Properties{
			CommonProperties: resources.CommonProperties{Name: "run-myapp"},
			Command:          "/usr/bin/myapp --config /etc/myapp.conf",
			Returns:          []int{0, 1, 2},
		}
		Expect(p.Validate()).To(Succeed())
		Expect(p.CommandLine()).To(Equal("/usr/bin/myapp --config /etc/myapp.conf"))
		Expect(p.AcceptedReturns()).To(Equal([]int{0, 1, 2}))
	})

	It("accepts refresh_only as another spelling of refreshonly and reports refreshonly", func() {
		p, err := decode(`{"name":"/bin/true","refresh_only":true,"subscribe":["file#/etc/x"]}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Validate()).To(Succeed())
		Expect(p.RefreshOnly).To(BeTrue())
		Expect(p.RefreshOnlyAlias).To(BeFalse())

		out, err := json.Marshal(p)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(out)).To(ContainSubstring(`"refreshonly":true`))
		Expect(string(out)).NotTo(ContainSubstring(`refresh_only`))
	})

	It("decodes every documented property and rejects unknown ones", func() {
		p, err := decode(`{
			"name": "build-app", "command": "make build", "cwd": "/opt/app",
			"environment": ["CC=gcc"], "path": "/usr/bin:/bin", "returns": [0, 2],
			"timeout": "5m", "creates": "/opt/app/bin/app", "onlyif": "/usr/bin/test -d /opt/app",
			"unless": "/usr/bin/test -f /opt/app/.skip", "refreshonly": true, "logoutput": true,
			"control": {"unless": "facts.virtual == 'docker'"}
		}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Validate()).To(Succeed())
		Expect(p.Unless).To(Equal("/usr/bin/test -f /opt/app/.skip"))
		Expect(p.Control.Unless).To(Equal("facts.virtual == 'docker'"))
		Expect(p.OnlyIf).To(Equal("/usr/bin/test -d /opt/app"))
		Expect(p.TimeoutDuration()).To(Equal(5 * time.Minute))
		Expect(p.LogOutput).To(BeTrue())

		_, err = decode(`{"name":"/bin/true","refresh-only":true}`)
		Expect(err).To(MatchError(ContainSubstring(`unknown field "refresh-only"`)))
	})

	It("gives no timeout when none is set", func() {
		Expect(valid().TimeoutDuration()).To(BeZero())
	})
})
