package agent_test

import (
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("A user's password hash on a running agent", func() {
	It("never leaves the host: not in the reply, its diff, the history record, the audit log nor the log", func() {
		lf := startLeakAgent()
		// A noop: the agent reads the account databases (getent) and
		// changes nothing on this machine; the hash is in the request all
		// the same, and every record about it passes the same redaction.
		hash := "$6$ccmleak01$6hTBAk2Y0qzhyrVDWq5Yk3QkOa5mA5yGJzkx2o1Wm7pCbu1Q0eBvLq9pUvZsH8PjWm3a0u4E1eU9n2r3c4d5e0"
		req := ensureRequest("user-secret-1", time.Minute, "user", map[string]any{"name": "ccm-leak-user", "password": hash, "shell": "/bin/sh"})
		req.Noop = true
		reply := lf.send(protocol.RequestNodeSubject("db-1"), req)
		Expect(reply.Error).To(BeNil())
		Expect(reply.Events).To(HaveLen(1))
		ev := reply.Events[0]
		Expect(ev.Failed).To(BeFalse(), "%v", ev.Errors)
		Expect(ev.NoopMessage).To(Equal("Would have created the user. Would have set the password"))
		Expect(ev.Diff).NotTo(BeNil())
		Expect(ev.Diff.Sensitive).To(BeTrue())
		props, err := json.Marshal(ev.Properties)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(props)).To(ContainSubstring(`"sensitive":true`))
		Expect(string(props)).To(ContainSubstring(`"name":"ccm-leak-user"`))
		for _, part := range []string{hash, hash[11:40], "ccmleak01"} {
			lf.expectNoCanary(req.ID, reply, part, `"resource":"user#ccm-leak-user"`)
		}
	})
})
