package protocol_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("ParseFilter and conditions joined by a comma or a space", func() {
	DescribeTable("refuses two conditions in one term, giving the right spelling",
		func(term, want string) {
			_, err := protocol.ParseFilter([]string{term})
			Expect(err).To(MatchError(protocol.ErrBadRequest))
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry("two equalities", "a=b,c=d", `filter "a=b,c=d": one condition per --where: write --where a=b --where c=d`),
		Entry("with spaces and an ordering", "os=debian, cpus>=4", `write --where os=debian --where cpus>=4`),
		Entry("after an inequality", "role!=db,env=prod", `write --where role!=db --where env=prod`),
		Entry("three conditions", "a=1,b=2,c=3", `write --where a=1 --where b=2,c=3`),
		Entry("joined by a space, as the dashboard's filter box writes them", "os=debian role=web",
			`filter "os=debian role=web": one condition per --where: write --where os=debian --where role=web (to match a value holding " role=web", use =~`),
		Entry("joined by a tab after an ordering", "cpus>=4\tenv!=prod", `write --where cpus>=4 --where env!=prod`),
	)

	DescribeTable("keeps values whose comma starts no condition",
		func(term, value string) {
			f, err := protocol.ParseFilter([]string{term})
			Expect(err).NotTo(HaveOccurred())
			Expect(f.Where).To(HaveLen(1))
			Expect(f.Where[0].Value).To(Equal(value))
		},
		Entry("a list-like value", "tags=a,b", "a,b"),
		Entry("a regular expression may hold ,k=", "opts=~x,y=z", "x,y=z"),
		Entry("a comma then an operator without a key", "v=a,=b", "a,=b"),
		Entry("a value with a space and no second condition", "desc=web server", "web server"),
		Entry("a regular expression may hold \" k=\"", "opts=~x y=z", "x y=z"),
	)
})
