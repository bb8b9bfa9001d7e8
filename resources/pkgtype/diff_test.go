package pkgtype_test

import (
	"context"
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("package diffs", func() {
	DescribeTable("say from which version to which, under noop and for real",
		func(ctx context.Context, ensure, current, noopTo, realTo string) {
			out, err := apply(ctx, true, props("nginx", ensure), newFake(current))
			Expect(err).NotTo(HaveOccurred())
			raw, err := json.Marshal(out.Diff)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(raw)).To(Equal(`{"changes":[{"field":"version","from":"` + current + `","to":"` + noopTo + `"}]}`))

			out, err = apply(ctx, false, props("nginx", ensure), newFake(current))
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Diff.Changes[0].From).To(Equal(current))
			Expect(out.Diff.Changes[0].To).To(Equal(realTo))
		},
		Entry("install", "present", "absent", "present", "3.0"),
		Entry("uninstall", "absent", "1.0", "absent", "absent"),
		Entry("upgrade to a version", "2.0", "1.0", "2.0", "2.0"),
		Entry("downgrade", "2.0", "3.0", "2.0", "2.0"),
		Entry("latest", "latest", "1.0", "latest", "3.0"),
	)

	It("has no diff when nothing changes", func(ctx context.Context) {
		out, err := apply(ctx, true, props("nginx", "2.0"), newFake("2.0"))
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Diff).To(BeNil())
	})
})
