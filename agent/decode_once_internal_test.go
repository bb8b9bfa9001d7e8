package agent

import (
	"encoding/json"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// decodesOf returns how many strict decodes fn made.
func decodesOf(fn func()) int64 {
	before := protocol.Decodes()
	fn()
	return protocol.Decodes() - before
}

var _ = Describe("Decoding a fleet request", func() {
	var g *admission
	BeforeEach(func() {
		reg, err := providers.Builtin(providers.Options{})
		Expect(err).ToNot(HaveOccurred())
		g = &admission{identity: "web-1", auth: trust{insecure: true}, replay: &fakeReplay{}, judge: &policyJudge{}, types: reg,
			defaultTTL: time.Minute, skew: time.Minute, now: time.Now, log: slog.New(slog.DiscardHandler),
			facts: func() *factSet { return &factSet{} }}
	})

	// admitLikeOnRequest is what onRequest does with m up to its answer.
	admitLikeOnRequest := func(m *nats.Msg) (*job, verdict, *protocol.Error) {
		r := &job{received: time.Now()}
		v, _, e := g.admit(r, m)
		if v == refused {
			claimID(r, m.Data)
		}
		return r, v, e
	}

	It("takes a refused request's id from its one decode, even when the document then breaks off", func() {
		data := []byte(`{"protocol":"io.choria.ccm.v1.fleet.request","id":"claimed-9","created":"2026-01-01T00:00:00Z","noop":tru`)
		var r *job
		var e *protocol.Error
		n := decodesOf(func() { r, _, e = admitLikeOnRequest(&nats.Msg{Subject: "x", Data: data}) })
		Expect(e).ToNot(BeNil())
		Expect(e.Code).To(Equal(protocol.CodeBadRequest))
		Expect(r.id()).To(Equal("claimed-9"))
		Expect(n).To(Equal(int64(1)))
	})

	It("reads the id of a request its decode refused before reaching the id, and names the others unknown", func() {
		// An id after the faulty key, or behind a nesting the decoder
		// refuses before reading anything: the requester must still be
		// able to match the refusal.
		deep := `{"protocol":"io.choria.ccm.v1.fleet.request","ensure":{"properties":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `},"id":"deep-1"}`
		for doc, want := range map[string]string{`{"bogus":1,"id":"late-1"}`: "late-1", deep: "deep-1", `{"id":"not valid id!","bogus":1}`: unknownID, `not json`: unknownID} {
			r, v, _ := admitLikeOnRequest(&nats.Msg{Subject: "x", Data: []byte(doc)})
			Expect(v).To(Equal(refused))
			Expect(r.id()).To(Equal(want), doc)
		}
	})

	// admitEnsure admits an exec ensure request with props, and returns
	// the decodes of its admission and of the engine's Prepare of it.
	admitEnsure := func(id string, props map[string]any, env *templates.Env) (admission, prepare int64) {
		req := protocol.NewFleetRequest(id, time.Now(), time.Minute)
		raw, err := json.Marshal(props)
		Expect(err).ToNot(HaveOccurred())
		req.Ensure = &protocol.EnsureRequest{Protocol: protocol.EnsureRequestProtocol, Type: "exec", Properties: raw}
		data, err := json.Marshal(req)
		Expect(err).ToNot(HaveOccurred())
		r := &job{received: time.Now()}
		admission = decodesOf(func() {
			v, _, e := g.admit(r, &nats.Msg{Subject: "x", Data: data})
			Expect(e).To(BeNil())
			Expect(v).To(Equal(admitted))
		})
		sess := engine.New(g.types).NewSession(engine.RunOptions{Noop: true, Env: env})
		prepare = decodesOf(func() {
			p, err := sess.Prepare(*r.body.ensure)
			Expect(err).ToNot(HaveOccurred())
			Expect(p.Ref()).To(HavePrefix("exec#/bin/echo "))
		})
		return admission, prepare
	}

	It("decodes an ensure request's envelope once and its properties once, straight into the type's value", func() {
		admission, prepare := admitEnsure("count-1", map[string]any{"name": "/bin/echo hi"}, templates.New(nil, nil))
		Expect(admission).To(Equal(int64(2)), "the envelope, then the properties into the exec type's value")
		Expect(prepare).To(BeZero(), "Prepare validates the value admission decoded")
	})

	It("decodes templated properties after their templates are resolved", func() {
		admission, prepare := admitEnsure("count-2", map[string]any{"name": "/bin/echo {{ facts.host }}"}, templates.New(map[string]any{"host": "web-1"}, nil))
		Expect(admission).To(Equal(int64(2)), "the envelope, then the properties into the map templates expand")
		Expect(prepare).To(Equal(int64(1)), "the expanded properties into the type's value")
	})
})
