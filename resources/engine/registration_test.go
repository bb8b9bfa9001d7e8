package engine_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/templates"
)

var _ = Describe("register_when_stable entries reading sensitive data", func() {
	prepared := func(env *templates.Env, spec engine.Spec) []resources.Registration {
		GinkgoHelper()
		reg := resources.NewRegistry()
		Expect(reg.RegisterType(&probeType{})).To(Succeed())
		Expect(reg.RegisterProvider(probeFactory{name: "probe", manage: true})).To(Succeed())
		var got []resources.Registration
		_, err := engine.New(reg).Ensure(context.Background(), engine.RunOptions{Env: env, Prepared: func(p *engine.Prepared) {
			got = p.Properties.Common().RegisterWhenStable
		}}, spec)
		Expect(err).NotTo(HaveOccurred())
		return got
	}
	env := func() *templates.Env {
		return templates.New(map[string]any{"ip": "10.0.0.9"}, map[string]any{"token": "CANARY-reg-5521", "port": "8080"}, templates.WithSensitive([]string{"token"}))
	}
	entry := func(service string, annotations map[string]any) map[string]any {
		e := map[string]any{"cluster": "c", "service": service, "protocol": "http", "address": "{{ Facts.ip }}", "port": "{{ data.port }}"}
		if annotations != nil {
			e["annotations"] = annotations
		}
		return e
	}

	It("marks, one by one, the entries whose templates read sensitive data", func() {
		got := prepared(env(), engine.Spec{Type: "file", Properties: map[string]any{"name": "/a", "register_when_stable": []any{
			entry("web", map[string]any{"t": "{{ data.token }}"}),
			entry("api", nil),
		}}})
		Expect(got).To(HaveLen(2))
		Expect(got[0].Service).To(Equal("web"))
		Expect(got[0].Sensitive).To(BeTrue())
		Expect(got[1].Service).To(Equal("api"))
		Expect(got[1].Address).To(Equal("10.0.0.9"))
		Expect(got[1].Sensitive).To(BeFalse())
	})

	It("marks an entry holding a sensitive value written literally, without templates", func() {
		got := prepared(env(), engine.Spec{Type: "file", Properties: map[string]any{"name": "/a", "register_when_stable": []any{
			map[string]any{"cluster": "c", "service": "db", "protocol": "tcp", "address": "10.0.0.1", "annotations": map[string]any{"k": "CANARY-reg-5521"}},
			map[string]any{"cluster": "c", "service": "ok", "protocol": "tcp", "address": "10.0.0.1"},
		}}})
		Expect(got).To(HaveLen(2))
		Expect(got[0].Sensitive).To(BeTrue())
		Expect(got[1].Sensitive).To(BeFalse())
	})
})
