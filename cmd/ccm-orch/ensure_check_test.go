package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
	"github.com/ccm-fleet/ccm/protocol"
)

// checkManifests are manifests every agent would refuse, by name; the
// suite writes them to checkManifestDir.
var checkManifests = map[string]string{
	"provider": "ccm:\n  resources:\n    - file:\n        - /tmp/ccm-check/motd: {provider: posx, content: hi, owner: root, group: root, mode: '0644'}\n",
	"mode":     "ccm:\n  resources:\n    - file:\n        - defaults: {owner: root, group: root, mode: '0888'}\n        - /tmp/ccm-check/a: {content: hi, mode: '0644'}\n        - /tmp/ccm-check/b: {content: hi}\n",
	"template": "ccm:\n  resources:\n    - file:\n        - /tmp/ccm-check/motd: {content: \"{{ lookup('facts.x' }}\", owner: root, group: root, mode: '0644'}\n",
	"splat":    "data: {x: {}}\nccm:\n  resources:\n    - exec:\n        - /bin/true:\n            '*': \"{{ data.x }}\"\n            control: {if: 'facts.os =='}\n",
	"relative": "ccm:\n  resources:\n    - file:\n        - tmp/motd: {content: hi, owner: root, group: root, mode: '0644'}\n",
}

var checkManifestDir = filepath.Join(os.TempDir(), fmt.Sprintf("ccm-check-manifests-%d", os.Getpid()))

// manifestArgs applies one of checkManifests.
func manifestArgs(name string) []string {
	return []string{"apply", filepath.Join(checkManifestDir, name+".yaml")}
}

var _ = Describe("ccm-orch ensure with a resource every agent would refuse", Ordered, func() {
	var (
		fl     *fleettest.Fleet
		server []string
		sub    *nats.Subscription
		stream jetstream.Stream
	)
	BeforeAll(func() {
		Expect(os.MkdirAll(checkManifestDir, 0o700)).To(Succeed())
		DeferCleanup(os.RemoveAll, checkManifestDir)
		for name, doc := range checkManifests {
			Expect(os.WriteFile(filepath.Join(checkManifestDir, name+".yaml"), []byte(doc), 0o600)).To(Succeed())
		}
		fl = fleettest.StartWith(GinkgoT(), fleettest.Options{History: true}, 4, nil, "os=debian,rhel")
		server = []string{"--server", fl.URL()}
		nc := fl.Connect(GinkgoT())
		var err error
		sub, err = nc.SubscribeSync("ccm.v1.req.>")
		Expect(err).NotTo(HaveOccurred())
		Expect(nc.Flush()).To(Succeed())
		js, err := jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		stream, err = js.Stream(context.Background(), protocol.HistoryStream)
		Expect(err).NotTo(HaveOccurred())
	})
	historyMsgs := func() uint64 {
		info, err := stream.Info(context.Background())
		Expect(err).NotTo(HaveOccurred())
		return info.State.Msgs
	}
	file := func(path string, extra ...string) []string {
		return append([]string{"ensure", "file", path, "--owner", "root", "--group", "root", "--mode", "0644"}, extra...)
	}
	const motd = "/tmp/ccm-check/{{ lookup('facts.identity') }}/motd"

	DescribeTable("exits 1 with one line naming the problem, sending and recording nothing",
		func(args []string, want string) {
			before := historyMsgs()
			code, out, errOut := orch(append(args, server...)...)
			Expect(code).To(Equal(1), errOut)
			Expect(out).To(BeEmpty())
			Expect(lines(errOut)).To(HaveLen(1), errOut)
			Expect(errOut).To(ContainSubstring(want))
			Expect(historyMsgs()).To(Equal(before), "no request record in history")

			// A valid request sent afterwards is the first thing the
			// subscriber sees: the refused one published nothing.
			code, _, errOut = orch(append([]string{"ensure", "exec", "/bin/true", "--creates", "/", "--host", "sim-0001", "--noop"}, server...)...)
			Expect(code).To(Equal(0), errOut)
			msg, err := sub.NextMsg(5 * time.Second)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(msg.Data)).To(ContainSubstring("/bin/true"))
			Expect(string(msg.Data)).NotTo(ContainSubstring("/tmp/ccm-check"))
			_, err = sub.NextMsg(50 * time.Millisecond)
			Expect(err).To(MatchError(nats.ErrTimeout), "exactly one request was published")
			// The valid request's records (the orchestrator's request record
			// and the host's, which the agent publishes after its reply) are
			// all in before the next entry counts: on a loaded machine the
			// host's record once landed inside the next entry's count.
			Eventually(historyMsgs).WithTimeout(30*time.Second).Should(Equal(before+2), "the valid request's two records")
		},
		Entry("an unknown flag (property)", append(file("/tmp/ccm-check/motd"), "--colour", "red"), "unknown long flag '--colour'"),
		Entry("mode 0888", []string{"ensure", "file", motd, "--owner", "root", "--group", "root", "--mode", "0888"},
			`file#`+motd+`: invalid resource: property mode: "0888" is not an octal number`),
		Entry("a relative path", file("tmp/motd"), `file#tmp/motd: invalid resource: property name: "tmp/motd" is not an absolute path`),
		Entry("a provider the type lacks", file(motd, "--provider", "posx"), `unknown provider "posx" for file (known: posix)`),
		Entry("a template that does not parse", file(motd, "--content", "{{ lookup('facts.identity' }}"),
			`property content: expression failed: "lookup('facts.identity'": unexpected token EOF`),
		Entry("a condition that does not parse", file(motd, "--if", "facts.os =="), `property control.if: expression failed`),
		Entry("an ensure value the type lacks", []string{"ensure", "service", "nginx", "runing"}, `service#nginx: invalid resource: property ensure: "runing" is not one of running, stopped`),
		Entry("an exec timeout that is not a duration", []string{"ensure", "exec", "/bin/true", "--timeout", "3x"}, `property timeout: "3x" is not a duration`),
		Entry("--timeout on a type without a command (the reply deadline is --reply-timeout)", file(motd, "--timeout", "5s"),
			"--timeout is only an exec command's own timeout; how long hosts have to reply is --reply-timeout"),
		Entry("--timeout on apply", []string{"apply", "../../examples/webserver.yaml", "--timeout", "5s"}, "how long hosts have to reply is --reply-timeout"),
		Entry("--timeout on discover", []string{"discover", "--timeout", "5s"}, "the discovery round's deadline is --discovery-timeout"),
		Entry("a negative --discovery-quiet", file(motd, "--discovery-quiet=-1s"), "--discovery-quiet -1s is negative"),
		Entry("a negative --discovery-timeout on discover", []string{"discover", "--discovery-timeout=-2s"}, "--discovery-timeout -2s is negative"),
		Entry("a negative --reply-timeout", file(motd, "--reply-timeout=-5s"), "--reply-timeout -5s is negative"),
		Entry("a --discovery-quiet that is not a duration", []string{"audit", "../../examples/webserver.yaml", "--discovery-quiet", "5x"}, `--discovery-quiet: "5x" is not a duration`),
		Entry("a manifest with a provider its type lacks", manifestArgs("provider"), `provider.yaml: resources[0] file#/tmp/ccm-check/motd: invalid resource: unknown provider "posx" for file (known: posix)`),
		Entry("a manifest with mode 0888 from its list's defaults", manifestArgs("mode"), `mode.yaml: resources[0] file#/tmp/ccm-check/b: invalid resource: property mode: "0888" is not an octal number`),
		Entry("a manifest with a template that does not parse", manifestArgs("template"), `template.yaml: resources[0] file#/tmp/ccm-check/motd: invalid resource: property content: expression failed`),
		Entry("a manifest whose * cannot be known with a bad condition", manifestArgs("splat"), `splat.yaml: resources[0] exec#/bin/true: invalid resource: property control.if: expression failed`),
		Entry("an audit of a manifest with a relative path", append([]string{"audit"}, manifestArgs("relative")[1:]...), `relative.yaml: resources[0] file#tmp/motd: invalid resource: property name: "tmp/motd" is not an absolute path`),
		Entry("a --where that does not parse", file("/tmp/ccm-check/motd", "--where", "os=~("), "os=~("),
		// JSON would carry each invalid byte as U+FFFD: the hosts would
		// write, run or select by other text than the one given.
		Entry("content that is not UTF-8", file(motd, "--content", "ab\xffcd"), `file properties: bad_request: field "content": not valid UTF-8 at byte 2`),
		Entry("a command that is not UTF-8", []string{"ensure", "exec", "/bin/echo \xfe", "--noop"}, `exec properties: bad_request: field "name": not valid UTF-8 at byte 10`),
		Entry("a --where value that is not UTF-8", file(motd, "--where", "os=deb\xffian"), `filter "os=deb\xffian": value is not valid UTF-8`),
	)

	It("leaves to the agents what depends on their facts", func() {
		code, _, errOut := orch(append(file("{{ lookup('facts.path') }}", "--noop", "--host", "sim-0001"), server...)...)
		Expect(code).To(Equal(2), "the path fact is missing on the host, which only the host can tell: "+errOut)
		msg, err := sub.NextMsg(5 * time.Second)
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Contains(string(msg.Data), "facts.path")).To(BeTrue())
	})
})
