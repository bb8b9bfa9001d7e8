package continuous

import (
	"fmt"
)

// localRegistrationAllowed judges a registration of service by resource
// of a manifest no signer vouches for (a local file, or a bundle pinned
// by checksum, b) with the policy's top-level registration.services.
// Without a policy, CCM's behaviour: every service is allowed. A refusal
// is logged at every run and audited once per source and service.
func (w *worker) localRegistrationAllowed(resource, service string, b *bundle) bool {
	a := w.a
	if a.opts.Policy == nil {
		return true
	}
	d := a.opts.Policy.CheckLocalRegistration(service)
	if d.Allowed {
		return true
	}
	msg := fmt.Sprintf("registration of service %q by %s refused: %s (%s)", service, resource, d.Reason, d.Rule)
	if w.localRegRefused == nil {
		w.localRegRefused = map[string]bool{}
	}
	if !w.localRegRefused[service] {
		w.localRegRefused[service] = true
		var rec *AuditRecord
		if b != nil {
			rec = w.record(b, DecisionForbidden, msg, nil)
		} else {
			rec = &AuditRecord{Subject: w.src.String(), Decision: DecisionForbidden, Message: msg}
		}
		rec.Rule, rec.Value = d.Rule, d.Value
		a.audit(rec)
	}
	a.log.Error("registrations: refused by the policy", "manifest", w.src.String(), "resource", resource, "service", service, "rule", d.Rule, "error", msg)
	return false
}
