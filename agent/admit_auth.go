package agent

import (
	"github.com/nats-io/nats.go"

	"github.com/ccm-fleet/ccm/protocol"
)

// authenticator is admission's first stage: who signed a document, a
// request's or an assignment's.
type authenticator interface {
	// authenticate checks that sig is signerKey's signature of the exact
	// bytes of data and that the policy trusts signerKey. signed is
	// whether the signature is valid; s is the trusted signer, nil when
	// there is none (an unsigned document, or an unlisted key, in insecure
	// mode only: otherwise e refuses them).
	authenticate(data []byte, signerKey, sig string) (s *Signer, signed bool, e *protocol.Error)
}

// trust authenticates against the signers of a policy; insecure lets
// unsigned documents and unlisted keys through.
type trust struct {
	policy   *Policy
	insecure bool
	// keys checks signatures with the signers' expanded public keys
	// cached; nil checks each with protocol.Verify
	keys *protocol.Verifier
}

// signerKeys bounds the expanded signer keys an agent keeps: a policy
// trusts a handful of signers, and keys it does not trust are bounded too.
const signerKeys = 64

// verify checks sig, with the cached keys when there are.
func (t trust) verify(data []byte, signerKey, sig string) error {
	if t.keys != nil {
		return t.keys.Verify(data, signerKey, sig)
	}
	return protocol.Verify(data, signerKey, sig)
}

var _ authenticator = trust{}

func (t trust) authenticate(data []byte, signerKey, sig string) (*Signer, bool, *protocol.Error) {
	if signerKey == "" && sig == "" {
		if !t.insecure {
			return nil, false, protocol.NewError(protocol.CodeUnauthenticated, "unsigned request: this agent runs only requests signed by a key its policy trusts")
		}
		return nil, false, nil
	}
	if err := t.verify(data, signerKey, sig); err != nil {
		return nil, false, protocol.NewError(protocol.CodeUnauthenticated, "signature of signer %.60s: %s", signerKey, err)
	}
	s, ok := t.policy.SignerByKey(signerKey)
	switch {
	case ok:
		return s, true, nil
	case !t.insecure:
		return nil, true, protocol.NewError(protocol.CodeUnauthenticated, "signer %s is not trusted by this agent's policy", signerKey)
	}
	return nil, true, nil
}

// authenticateMsg is the first stage for fleet request m: its signature
// headers, the signer named in r's audit line. It returns the signer key
// and whether the signature is valid.
func (g *admission) authenticateMsg(r *job, m *nats.Msg) (key string, signed bool, e *protocol.Error) {
	key, sig := m.Header.Get(protocol.HeaderSigner), m.Header.Get(protocol.HeaderSignature)
	s, signed, e := g.auth.authenticate(m.Data, key, sig)
	if signed {
		r.audit.Signer.Key = key
	}
	if s != nil {
		r.signer = s
		r.audit.Signer.Name = s.Name
	}
	return key, signed, e
}
