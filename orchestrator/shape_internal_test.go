package orchestrator

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

var _ = DescribeTable("a shaper without facts replaces the host's identity where it stands as a token",
	func(message, identity, want string) {
		Expect(newShaper(identity, nil).shape(message)).To(Equal(want))
	},
	Entry("in a path", "open /srv/sim-0001/motd: no such file or directory", "sim-0001", "open /srv/<host>/motd: no such file or directory"),
	Entry("twice", "sim-0001: /srv/sim-0001", "sim-0001", "<host>: /srv/<host>"),
	Entry("before a domain", "sim-0001.example.com refused", "sim-0001", "<host>.example.com refused"),
	Entry("not inside a longer token", "/srv/sim-00012/motd", "sim-0001", "/srv/sim-00012/motd"),
	Entry("not a short identity", "a b a", "a", "a b a"),
	Entry("nothing to replace", "exit code 1", "sim-0001", "exit code 1"),
)

var _ = DescribeTable("a host's shaper replaces its identity, then its fact values from the longest, as whole tokens",
	func(message string, facts map[string]any, want string) {
		Expect(newShaper("web-01", facts).shape(message)).To(Equal(want))
	},
	Entry("a path from two facts", "open /srv/eu-west/web-01/motd: denied", map[string]any{"region": "eu-west", "os": "debian"},
		"open /srv/<facts.region>/<host>/motd: denied"),
	Entry("a nested fact", "no package deploy on debian", map[string]any{"host": map[string]any{"info": map[string]any{"platform": "debian"}}},
		"no package deploy on <facts.host.info.platform>"),
	Entry("the longest value first", "zone eu-west-1 (eu-west)", map[string]any{"region": "eu-west", "zone": "eu-west-1"},
		"zone <facts.zone> (<facts.region>)"),
	Entry("not inside a longer token", "/srv/debianx", map[string]any{"os": "debian"}, "/srv/debianx"),
	Entry("a two-character value", "/srv/db/x", map[string]any{"role": "db"}, "/srv/<facts.role>/x"),
	Entry("not one character, numbers or booleans", "cpu 16 of 16384 true in /srv/d", map[string]any{"role": "d", "mem": 16384.0, "virtual": true},
		"cpu 16 of 16384 true in /srv/d"),
	Entry("no facts", "open /srv/web-01/motd", nil, "open /srv/<host>/motd"),
)

var _ = Describe("grouping by message shape", func() {
	It("puts hosts whose failures differ only by their identity and facts in one group", func() {
		res := &Result{facts: map[string]map[string]any{}}
		for i := range 300 {
			id := fmt.Sprintf("sim-%04d", i)
			role := []string{"web", "db", "cache"}[i%3]
			res.facts[id] = map[string]any{"role": role, "os": "debian"}
			failed := ev("failed")
			failed.Errors = []string{fmt.Sprintf("open /srv/%s/%s/motd: no such file or directory", role, id)}
			res.Expected = append(res.Expected, id)
			res.Hosts = append(res.Hosts, HostResult{Identity: id, Outcome: OutcomeFailed, Events: []*protocol.TransactionEvent{failed}})
		}
		res.summarize(ensureRefs("file#/srv/{{ lookup('facts.role') }}/{{ lookup('facts.identity') }}/motd"))
		Expect(res.Groups).To(HaveLen(1))
		Expect(res.Groups[0].Message).To(Equal("open /srv/<facts.role>/<host>/motd: no such file or directory"))
		Expect(res.Groups[0].Count).To(Equal(300))
	})

	It("puts hosts whose failures differ only by their own identity in one group", func() {
		res := &Result{}
		for i := range 300 {
			id := fmt.Sprintf("sim-%04d", i)
			failed := ev("failed")
			failed.Errors = []string{fmt.Sprintf("open /missing/%s/motd: no such file or directory", id)}
			res.Expected = append(res.Expected, id)
			res.Hosts = append(res.Hosts, HostResult{Identity: id, Outcome: OutcomeFailed, Events: []*protocol.TransactionEvent{failed}})
		}
		res.Hosts = append(res.Hosts, HostResult{Identity: "sim-0300", Outcome: OutcomeFailed,
			Error: &protocol.Error{Code: protocol.CodeExpired, Message: "sim-0300 got it too late"}, Events: []*protocol.TransactionEvent{}})
		res.Expected = append(res.Expected, "sim-0300")
		res.summarize(ensureRefs("file#/missing/{{ lookup('facts.identity') }}/motd"))
		Expect(res.Groups).To(HaveLen(2))
		Expect(res.Groups[0].Message).To(Equal("open /missing/<host>/motd: no such file or directory"))
		Expect(res.Groups[0].Count).To(Equal(300))
		Expect(res.Groups[0].Hosts).To(HaveLen(300))
		Expect(res.Groups[1].Message).To(Equal("expired: <host> got it too late"))
		Expect(res.Hosts[0].Events[0].Errors).To(Equal([]string{"open /missing/sim-0000/motd: no such file or directory"}), "each host keeps its own message")
	})
})
