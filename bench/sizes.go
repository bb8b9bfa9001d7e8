package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// sampleSizes measures the fleet noop request and one host's reply to it,
// made by the same code the orchestrator and the agents use, so the floor
// moves messages of the same sizes.
func (b *bencher) sampleSizes() error {
	dir, err := b.dir("sizes")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	spec := b.fileSpec(dir, "managed by the bench\n")
	ens, err := protocol.NewEnsureRequest("file", spec.properties())
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	id := "abcdefghij0123456789"
	fr := protocol.NewFleetRequest(id, time.Now(), time.Minute)
	fr.Noop, fr.Ensure = true, ens
	fr.Sender, fr.Reply = b.sign.signer.PublicKey(), "_INBOX.abcdefghijklmnopqrstuv.abcdefgh"
	data, err := json.Marshal(fr)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	b.requestBody = data
	b.requestBytes = len(data) + b.sign.headerBytes(data)

	reg, err := providers.Builtin(providers.Options{})
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	eng := engine.New(reg)
	facts := agent.SimulatedFacts(0, "sim", map[string]any{"simulated": true}, nil)
	if err := os.MkdirAll(filepath.Join(dir, facts["identity"].(string)), 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	props, err := ens.PropertiesMap()
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	var ev *protocol.TransactionEvent
	for _, noop := range []bool{false, true} { // create the file, then the steady state
		ev, err = eng.Ensure(context.Background(), engine.RunOptions{Noop: noop, Env: templates.New(facts, nil)},
			engine.Spec{Type: "file", Properties: props})
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	reply := protocol.NewFleetReply(id, facts["identity"].(string), time.Now())
	reply.Events = append(reply.Events, ev)
	data, err = json.Marshal(reply)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	b.replyBytes = len(data) + b.sign.headerBytes(data) // agents sign their replies too
	b.replyBodyBytes = len(data)
	return nil
}
