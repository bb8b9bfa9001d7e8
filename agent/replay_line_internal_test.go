package agent

import (
	"encoding/json"
	"reflect"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// fillEntry sets v and every exported field below it (v settable) to a
// value that is not empty, so that a field the encoder leaves out shows;
// a field of a kind it does not know fails.
func fillEntry(v reflect.Value, n *int) {
	GinkgoHelper()
	*n++
	switch {
	case v.Type() == reflect.TypeFor[json.RawMessage]():
		v.SetBytes([]byte(`{"n":1}`))
	case v.Type() == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Date(2026, 11, 29, 13, 5, 0, *n, time.UTC)))
	case v.Kind() == reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillEntry(v.Elem(), n)
	case v.Kind() == reflect.String:
		v.SetString("v" + string(rune('a'+*n%26)) + " <\"é\\&>")
	case v.Kind() == reflect.Bool:
		v.SetBool(true)
	case v.Kind() == reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fillEntry(v.Index(0), n)
		fillEntry(v.Index(1), n)
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillEntry(v.Field(i), n)
			}
		}
	default:
		Fail("fillEntry does not know a field of kind " + v.Kind().String() + ": teach it, and encodeReplayLine")
	}
}

var _ = Describe("encodeReplayLine", func() {
	It("writes every field encoding/json writes, byte for byte", func() {
		var e replayEntry
		n := 0
		fillEntry(reflect.ValueOf(&e).Elem(), &n)
		Expect(e.Who.Resources).To(HaveLen(2))
		want, err := json.Marshal(&e)
		Expect(err).NotTo(HaveOccurred())
		got, err := encodeReplayLine(&e)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(got)).To(Equal(string(want)))
	})

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
