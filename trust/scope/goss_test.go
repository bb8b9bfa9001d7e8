package scope_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/servicetype"
	"github.com/ccm-fleet/ccm/trust/scope"
)

var _ = Describe("Scope of goss rules", func() {
	r := scope.Resolver{SearchPath: "/usr/local/bin:/usr/bin:/bin", Shell: "/bin/sh"}
	withRules := func(rules map[string]any) resources.Properties {
		p := &servicetype.Properties{}
		p.Name, p.Ensure = "nginx", servicetype.EnsureRunning
		p.HealthChecks = []resources.HealthCheck{{GossRules: rules}}
		return p
	}

	It("judges an addr rule's address by net.urls: a metadata address needs a prefix naming it", func() {
		ds := (*scope.Scope)(nil).Resource(r, withRules(map[string]any{"addr": map[string]any{"tcp://169.254.169.254:80": map[string]any{"reachable": true}}}), "")
		d := verdict(ds)
		Expect(d.Allowed).To(BeFalse())
		Expect(d.String()).To(Equal(`denied health_checks[0].goss_rules.addr "tcp://169.254.169.254:80" by net.urls (not set): 169.254.169.254 is a cloud metadata address: only a net.urls prefix naming it allows it`))
	})

	It("judges a command rule as sh -c LINE: a shell, allowed only by a pattern spelling out every argument", func() {
		s, err := scope.Compile(&scope.Rules{Exec: &scope.Exec{Commands: []string{"/bin/sh **", `/bin/sh -c "systemctl is-active nginx"`}}}, nil, []string{"service", "exec"})
		Expect(err).ToNot(HaveOccurred())
		ok := verdict(s.Resource(r, withRules(map[string]any{"command": map[string]any{"systemctl is-active nginx": map[string]any{"exit-status": 0}}}), ""))
		Expect(ok.Allowed).To(BeTrue(), ok.String())
		Expect(ok.Rule).To(Equal(`exec.commands[1] "/bin/sh -c \"systemctl is-active nginx\""`))
		no := verdict(s.Resource(r, withRules(map[string]any{"command": map[string]any{"cat /etc/shadow": map[string]any{"exit-status": 0}}}), ""))
		Expect(no.Allowed).To(BeFalse())
		Expect(no.Value).To(HavePrefix(`sh -c 'cat /etc/shadow'`))
	})
})
