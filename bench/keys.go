package bench

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

// signing is what the bench signs its requests with, as production does:
// a user key, its seed file for ccm-orch --key, and the agents' policy
// that trusts it for file resources.
type signing struct {
	kp         nkeys.KeyPair
	signer     *protocol.KeySigner
	seedFile   string
	policyFile string
}

// newSigning makes a key and the policy trusting it below dir.
func newSigning(dir string) (*signing, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("bench key: %w", err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return nil, fmt.Errorf("bench key: %w", err)
	}
	signer, err := protocol.NewKeySigner(kp)
	if err != nil {
		return nil, fmt.Errorf("bench key: %w", err)
	}
	s := &signing{kp: kp, signer: signer, seedFile: filepath.Join(dir, "bench.seed"), policyFile: filepath.Join(dir, "policy.yaml")}
	if err := os.WriteFile(s.seedFile, seed, 0o600); err != nil {
		return nil, fmt.Errorf("bench key: %w", err)
	}
	policy := fmt.Sprintf("signers:\n  - name: bench\n    public_key: %s\n    allow: [file]\n", signer.PublicKey())
	if err := os.WriteFile(s.policyFile, []byte(policy), 0o644); err != nil {
		return nil, fmt.Errorf("bench policy: %w", err)
	}
	return s, nil
}

// client is an orchestrator on nc that signs with the bench's key.
func (s *signing) client(nc *nats.Conn) *orchestrator.Client {
	return orchestrator.New(nc, orchestrator.WithKey(s.kp))
}

// headerBytes is how many bytes the signature headers add to a message
// whose body is body, as NATS sends them.
func (s *signing) headerBytes(body []byte) int {
	n := len("NATS/1.0\r\n\r\n")
	for k, vs := range s.signer.Header(body) {
		for _, v := range vs {
			n += len(k) + len(": ") + len(v) + len("\r\n")
		}
	}
	return n
}
