package agent_test

import (
	"fmt"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/protocol"
)

// Issue 39: a noop request whose content is a hostile template used to
// kill the agent (finding 1: stack overflow; finding 6: out of memory). It
// is answered bad_request naming the sandbox's refusal or limit, writes
// nothing, and the agent keeps serving.
var _ = Describe("Agent templates in the sandbox (issue 39)", func() {
	It("answers noop requests with recursive or unbounded templates with bad_request and keeps serving", func() {
		f := startAgent(agent.Config{Identity: "web-1"}, map[string]any{"os": "debian"})
		target := filepath.Join(f.dir, "motd")
		i := 0
		for content, words := range map[string]string{
			`{{ jet("[[ block r() ]][[ yield r() ]][[ end ]]") }}`:                    "block r calls itself (recursion) and is not allowed in the template sandbox",
			`{{ jet("[[ exec(\"template\") ]]") }}`:                                   "exec() is not allowed in the template sandbox",
			`{{ jet("[[ repeat(\"x\", 1000000000000) ]]") }}`:                         "(values limit)",
			`{{ jet("[[ range i := ints(0, 1000000000000) ]]x[[ end ]]") }}`:          "(steps limit)",
			`{{ jet("[[ range i := ints(0, 900000) ]]xxxxxxxxxxxxxxxxx[[ end ]]") }}`: "(output limit)",
		} {
			i++
			req := ensureRequest(fmt.Sprintf("sbx-%d", i), time.Minute, "file", map[string]any{"name": target, "content": content, "owner": "root", "group": "root", "mode": "0644"})
			req.Noop = true
			reply := f.send(protocol.RequestNodeSubject("web-1"), req)
			Expect(reply.Error).ToNot(BeNil(), content)
			Expect(reply.Error.Code).To(Equal(protocol.CodeBadRequest), content)
			Expect(reply.Error.Message).To(ContainSubstring(words))
			Expect(target).NotTo(BeAnExistingFile())
		}
		reply := f.send(protocol.RequestNodeSubject("web-1"), ensureRequest("good", time.Minute, "exec", map[string]any{"name": "/bin/true"}))
		Expect(reply.Error).To(BeNil())
		Expect(reply.Events[0].Failed).To(BeFalse())
	})
})
