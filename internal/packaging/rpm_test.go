package packaging_test

import (
	"context"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// RPM file flags the specs read (rpm's rpmfileAttrs).
const (
	rpmConfig      = 1 << 0 // %config
	rpmNoReplace   = 1 << 4 // %config(noreplace)
	rpmLicenseFile = 1 << 7 // %license
)

// rpmPackage is a built .rpm, read with rpm itself.
type rpmPackage struct {
	ctx  context.Context
	path string
}

// tag is a header tag's value as rpm prints it (e.g. "LICENSE",
// "DESCRIPTION", "POSTIN").
func (r rpmPackage) tag(tag string) string {
	GinkgoHelper()
	out := run(r.ctx, "rpm", "-qp", "--queryformat", "%{"+tag+"}", r.path)
	if out == "(none)" {
		return ""
	}
	return out
}

// files maps each packaged path to its file flags (%config, %license...).
func (r rpmPackage) files() map[string]int {
	GinkgoHelper()
	out := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(run(r.ctx, "rpm", "-qp", "--queryformat", "[%{FILENAMES} %{FILEFLAGS}\n]", r.path)), "\n") {
		name, flags, ok := strings.Cut(line, " ")
		Expect(ok).To(BeTrue(), line)
		n, err := strconv.Atoi(flags)
		Expect(err).NotTo(HaveOccurred(), line)
		out[name] = n
	}
	return out
}
