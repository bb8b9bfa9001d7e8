package agent

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/exectype"
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
			defaultTTL: time.Minute, skew: time.Minute, now: time.Now,
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

	// admitEnsure admits an ensure request of typ with the properties raw
	// (sent as data does: encoded by encode), and returns the decodes of
	// its admission and of the engine's Prepare of it, and what Prepare
	// made.
	admitEnsure := func(id, typ string, raw []byte, encode func(any) ([]byte, error), env *templates.Env) (admission, prepare int64, p *engine.Prepared) {
		req := protocol.NewFleetRequest(id, time.Now(), time.Minute)
		req.Ensure = &protocol.EnsureRequest{Protocol: protocol.EnsureRequestProtocol, Type: typ, Properties: raw}
		data, err := encode(req)
		Expect(err).ToNot(HaveOccurred())
		r := &job{received: time.Now()}
		admission = decodesOf(func() {
			v, _, e := g.admit(r, &nats.Msg{Subject: "x", Data: data})
			Expect(e).To(BeNil())
			Expect(v).To(Equal(admitted))
		})
		sess := engine.New(g.types).NewSession(engine.RunOptions{Noop: true, Env: env})
		prepare = decodesOf(func() {
			p, err = sess.Prepare(*r.body.ensure)
			Expect(err).ToNot(HaveOccurred())
		})
		return admission, prepare, p
	}
	// admitExec is admitEnsure of an exec request with props, encoded
	// by json.Marshal.
	admitExec := func(id string, props map[string]any, env *templates.Env) (admission, prepare int64) {
		raw, err := json.Marshal(props)
		Expect(err).ToNot(HaveOccurred())
		admission, prepare, p := admitEnsure(id, "exec", raw, json.Marshal, env)
		Expect(p.Ref()).To(HavePrefix("exec#/bin/echo "))
		return admission, prepare
	}

	It("decodes an ensure request's envelope once and its properties once, straight into the type's value", func() {
		admission, prepare := admitExec("count-1", map[string]any{"name": "/bin/echo hi"}, templates.New(nil, nil))
		Expect(admission).To(Equal(int64(2)), "the envelope, then the properties into the exec type's value")
		Expect(prepare).To(BeZero(), "Prepare validates the value admission decoded")
	})

	It("decodes templated properties after their templates are resolved", func() {
		admission, prepare := admitExec("count-2", map[string]any{"name": "/bin/echo {{ facts.host }}"}, templates.New(map[string]any{"host": "web-1"}, nil))
		Expect(admission).To(Equal(int64(2)), "the envelope, then the properties into the map templates expand")
		Expect(prepare).To(Equal(int64(1)), "the expanded properties into the type's value")
	})

	It("decodes once the properties ccm-orch sends with &, < and >, as it encodes them now or escaped as json.Marshal did", func() {
		for i, props := range []struct {
			typ   string
			props map[string]any
		}{
			{"exec", map[string]any{"name": "/bin/sh -c 'a && b'"}},
			{"file", map[string]any{"name": "/tmp/index.html", "content": "<html>&amp;</html>\n", "owner": "root", "group": "root", "mode": "0644"}},
		} {
			e, err := protocol.NewEnsureRequest(props.typ, props.props)
			Expect(err).ToNot(HaveOccurred())
			escaped, err := json.Marshal(props.props)
			Expect(err).ToNot(HaveOccurred())
			Expect(string(escaped)).To(MatchRegexp(`\\u00(26|3c)`))
			for j, sent := range []struct {
				raw    []byte
				encode func(any) ([]byte, error)
			}{{e.Properties, protocol.EncodeJSON}, {escaped, json.Marshal}} {
				admission, prepare, p := admitEnsure(fmt.Sprintf("html-%d-%d", i, j), props.typ, sent.raw, sent.encode, templates.New(nil, nil))
				Expect(admission).To(Equal(int64(2)), "the envelope, then the properties into the type's value")
				Expect(prepare).To(BeZero(), "Prepare validates the value admission decoded: %s", sent.raw)
				Expect(p.Name()).To(Equal(props.props["name"]))
			}
		}
	})

	It("still expands a template whose opener is spelled with escapes", func() {
		raw := []byte(`{"name":"/bin/echo \u007b\u007b facts.host \u007d\u007d","unless":"test \u0024{ facts.host } = x"}`)
		admission, prepare, p := admitEnsure("escaped-1", "exec", raw, json.Marshal, templates.New(map[string]any{"host": "web-1"}, nil))
		Expect(admission).To(Equal(int64(2)), "the envelope, then the properties into the map templates expand")
		Expect(prepare).To(Equal(int64(1)), "the expanded properties into the type's value")
		Expect(p.Name()).To(Equal("/bin/echo web-1"))
		Expect(p.Properties.(*exectype.Properties).Unless).To(Equal("test web-1 = x"))
	})
})
