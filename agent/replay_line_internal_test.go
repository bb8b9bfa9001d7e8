package agent

import (
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("encodeReplayLine", func() {
	at := time.Date(2026, 11, 29, 13, 5, 7, 123456789, time.UTC)
	who := &replayWho{Subject: "ccm.req.node.h<1>", Signer: AuditSigner{Name: "ops \"team\"", Key: "UABC"}, Resources: []string{"file#/etc/motd", "exec#a\tb&c", "pkg#\xff"}}
	DescribeTable("writes the bytes encoding/json writes, and they read back as the entry",
		func(e replayEntry) {
			want, err := json.Marshal(&e)
			Expect(err).NotTo(HaveOccurred())
			got, err := encodeReplayLine(&e)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(got)).To(Equal(string(want)))
			var back replayEntry
			Expect(json.Unmarshal(got, &back)).To(Succeed())
			Expect(back.ID).To(Equal(e.ID))
			Expect(back.Expires.Equal(e.Expires)).To(BeTrue())
			Expect(back.Seen.Equal(e.Seen)).To(BeTrue())
			Expect(back.Ignored).To(Equal(e.Ignored))
			Expect(back.Done).To(Equal(e.Done))
			Expect(string(back.Reply)).To(Equal(string(e.Reply)))
		},
		Entry("received, with who sent it", replayEntry{ID: "req-1", Expires: at.Add(time.Hour), Seen: at, Who: who}),
		Entry("received, who without subject or resources", replayEntry{ID: "req-2", Expires: at, Seen: at, Who: &replayWho{}}),
		Entry("answered, with its reply", replayEntry{ID: "req-3", Expires: at, Seen: at, Done: true, Reply: json.RawMessage(`{"id":"req-3","events":[{"diff":"+hello\n"}]}`)}),
		Entry("ignored, no reply", replayEntry{ID: "req-4", Expires: at, Seen: at, Done: true, Ignored: true}),
		Entry("an id to escape", replayEntry{ID: "a\"b\\c\n<é>", Expires: at, Seen: at.In(time.FixedZone("", -5400))}),
		Entry("a reply that is not an object", replayEntry{ID: "req-5", Expires: at, Seen: at, Done: true, Reply: json.RawMessage(`[1,2]`)}),
	)

	It("keeps the agent's reply byte for byte", func() {
		reply := `{"id":"req-6","events":[{"diff":"<a>&\u2028"}]}`
		got, err := encodeReplayLine(&replayEntry{ID: "req-6", Expires: at, Seen: at, Done: true, Reply: json.RawMessage(reply)})
		Expect(err).NotTo(HaveOccurred())
		Expect(string(got)).To(HaveSuffix(`,"reply":` + reply + "}"))
		var back replayEntry
		Expect(json.Unmarshal(got, &back)).To(Succeed())
		Expect(string(back.Reply)).To(Equal(reply))
	})

	It("refuses what encoding/json refuses: a year past 9999, a reply that is not JSON", func() {
		_, err := encodeReplayLine(&replayEntry{ID: "far", Expires: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Seen: at})
		Expect(err).To(HaveOccurred())
		_, err = encodeReplayLine(&replayEntry{ID: "bad", Expires: at, Seen: at, Reply: json.RawMessage("not json")})
		Expect(err).To(HaveOccurred())
	})
})
