package protocol_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("Subjects", func() {
	DescribeTable("are built from encoded tokens",
		func(got, want string) { Expect(got).To(Equal(want)) },
		Entry("request all", protocol.RequestSubjectAll, "ccm.v1.req.all"),
		Entry("request node", protocol.RequestNodeSubject("web1.example.com"), "ccm.v1.req.node.web1%2Eexample%2Ecom"),
		Entry("request fact", protocol.RequestFactSubject("os", "debian"), "ccm.v1.req.fact.os.debian"),
		Entry("request nested fact", protocol.RequestFactSubject("host.info.platformFamily", "debian"), "ccm.v1.req.fact.host%2Einfo%2EplatformFamily.debian"),
		Entry("request fact with a dotted value", protocol.RequestFactSubject("platform_version", "22.04"), "ccm.v1.req.fact.platform_version.22%2E04"),
		Entry("request fact with an empty value", protocol.RequestFactSubject("role", ""), "ccm.v1.req.fact.role.%"),
		Entry("discovery all", protocol.DiscoverySubjectAll, "ccm.v1.disc.all"),
		Entry("discovery node", protocol.DiscoveryNodeSubject("db1"), "ccm.v1.disc.node.db1"),
		Entry("discovery fact", protocol.DiscoveryFactSubject("role", "web server"), "ccm.v1.disc.fact.role.web%20server"),
		Entry("history record", protocol.HistorySubject("req-1", "web1.example.com"), "ccm.v1.history.req-1.web1%2Eexample%2Ecom"),
		Entry("history request", protocol.HistoryRequestSubject("req-1"), "ccm.v1.history.req-1._request"),
		Entry("history of one run", protocol.HistoryRunSubjects("req-1"), "ccm.v1.history.req-1.>"),
		Entry("history stream subjects", protocol.HistorySubjects, "ccm.v1.history.>"),
		Entry("history stream", protocol.HistoryStream, "CCM_HISTORY"),
		Entry("nodes bucket", protocol.NodesBucket, "CCM_NODES"),
	)

	It("names the default subject facts", func() {
		Expect(protocol.DefaultSubjectFacts()).To(Equal([]string{"os", "platform", "role"}))
	})

	DescribeTable("parses history subjects",
		func(subject, wantID, wantIdentity string) {
			id, identity, err := protocol.ParseHistorySubject(subject)
			Expect(err).ToNot(HaveOccurred())
			Expect(id).To(Equal(wantID))
			Expect(identity).To(Equal(wantIdentity))
		},
		Entry("a host record", protocol.HistorySubject("r1", "web1.example.com"), "r1", "web1.example.com"),
		Entry("the request record", protocol.HistoryRequestSubject("r1"), "r1", ""),
	)

	DescribeTable("refuses subjects that are not history records",
		func(subject, want string) {
			_, _, err := protocol.ParseHistorySubject(subject)
			Expect(err).To(MatchError(protocol.ErrBadRequest))
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("other prefix", "ccm.v1.req.all", "is not a history subject"),
		Entry("no identity", "ccm.v1.history.r1", "expected ccm.v1.history.<request_id>.<identity>"),
		Entry("too many tokens", "ccm.v1.history.r1.a.b", "expected ccm.v1.history"),
		Entry("bad identity token", "ccm.v1.history.r1.a%zz", "identity: subject token"),
		Entry("bad request token", "ccm.v1.history.r%2.a", "request id: subject token"),
	)
})

var _ = Describe("EncodeToken", func() {
	DescribeTable("round trips any string through one subject token",
		func(in, want string) {
			tok := protocol.EncodeToken(in)
			Expect(tok).To(Equal(want))
			Expect(tok).ToNot(BeEmpty())
			Expect(tok).ToNot(ContainSubstring("."))
			Expect(tok).ToNot(ContainSubstring("*"))
			Expect(tok).ToNot(ContainSubstring(">"))
			Expect(strings.ContainsAny(tok, " \t\r\n\v\f")).To(BeFalse())
			back, err := protocol.DecodeToken(tok)
			Expect(err).ToNot(HaveOccurred())
			Expect(back).To(Equal(in))
		},
		Entry("plain word", "debian", "debian"),
		Entry("allowed punctuation", "a-b_c+d=e:f@g,h~i", "a-b_c+d=e:f@g,h~i"),
		Entry("dots", "web1.example.com", "web1%2Eexample%2Ecom"),
		Entry("space", "web server", "web%20server"),
		Entry("tab and newline", "a\tb\n", "a%09b%0A"),
		Entry("star", "*", "%2A"),
		Entry("greater than", ">", "%3E"),
		Entry("escape char", "100%", "100%25"),
		Entry("looks like an escape", "%2E", "%252E"),
		Entry("empty", "", "%"),
		Entry("lone percent", "%", "%25"),
		Entry("NUL", "\x00", "%00"),
		Entry("DEL", "\x7f", "%7F"),
		Entry("unicode", "café", "caf%C3%A9"),
		Entry("emoji", "🚀", "%F0%9F%9A%80"),
		Entry("invalid UTF-8", "\xff", "%FF"),
		Entry("dollar and slash", "$SYS/x", "%24SYS%2Fx"),
	)

	DescribeTable("DecodeToken accepts only canonical tokens",
		func(tok, want string) {
			_, err := protocol.DecodeToken(tok)
			Expect(err).To(MatchError(protocol.ErrBadRequest))
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("empty", "", "empty subject token"),
		Entry("raw dot", "a.b", `byte 1 ('.') must be escaped`),
		Entry("raw space with an escape", "a b%20", `byte 1 (' ') must be escaped`),
		Entry("truncated escape", "a%2", "incomplete escape at byte 1"),
		Entry("lower-case hex", "a%2e", "two upper-case hex digits"),
		Entry("not hex", "%GG", "two upper-case hex digits"),
		Entry("escaped letter", "%41", `'A' at byte 0 is escaped but must be written as itself`),
	)
})
