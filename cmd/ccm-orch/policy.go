package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"github.com/ccm-fleet/ccm/facts"
	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/trust/policy"
	"github.com/ccm-fleet/ccm/trust/scope"
)

// maxPolicyCheckRequest bounds a request file read by policy check.
const maxPolicyCheckRequest = protocol.DefaultMaxBytes

// policyCheckFlags are the arguments and flags of policy check.
type policyCheckFlags struct {
	policy, key, request, manifest, facts string
	noop, json, yaml                      bool
	// requestSet is whether --request was given: fisk reads a lone "-"
	// as an empty value, which means stdin here
	requestSet bool
}

func (a *app) registerPolicy(cli *fisk.Application) {
	c := &policyCheckFlags{}
	pol := cli.Command("policy", "Test an agent policy before shipping it")
	cmd := pol.Command("check", "Judge a request or manifest against one signer of a policy, offline, as an agent with the given facts would: one line per decision with the rule that made it (exit 0 allowed, 2 forbidden, 4 the request's filter leaves the host out, 1 usage or a policy that does not load)")
	cmd.Arg("policy", "The agent policy file (YAML or JSON)").Required().StringVar(&c.policy)
	cmd.Flag("key", "The signer to judge: its name in the policy (or its public key)").Required().PlaceHolder("NAME").StringVar(&c.key)
	cmd.Flag("request", "A request file: a fleet request (io.choria.ccm.v1.fleet.request) or an ensure request (io.choria.ccm.v1.resource.ensure.request), JSON or YAML; - for stdin").PlaceHolder("FILE").IsSetByUser(&c.requestSet).StringVar(&c.request)
	cmd.Flag("manifest", "A manifest file, as ccm-orch apply sends it").PlaceHolder("FILE").StringVar(&c.manifest)
	cmd.Flag("facts", "The facts (YAML or JSON map) of the host the request would reach; templates, conditions and hosts scopes see them").Required().PlaceHolder("FILE").StringVar(&c.facts)
	cmd.Flag("noop", "Judge the request as a dry run (as with --noop or audit)").UnNegatableBoolVar(&c.noop)
	cmd.Flag("json", "Print the decisions as one JSON document").UnNegatableBoolVar(&c.json)
	yamlFlag(cmd, &c.yaml)
	cmd.Action(func(*fisk.ParseContext) error { return a.policyCheck(c) })
}

// policyCheck runs ccm-orch policy check.
func (a *app) policyCheck(c *policyCheckFlags) error {
	if c.requestSet && c.request == "" {
		c.request = "-"
	}
	if err := oneFormat(map[string]bool{"--json": c.json, "--yaml": c.yaml}); err != nil {
		return err
	}
	if (c.request == "") == (c.manifest == "") {
		return program.Exit(protocol.ExitError, errors.New("policy check: give one of --request FILE or --manifest FILE"))
	}
	p, err := policy.LoadPolicy(c.policy)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	f, err := facts.ReadFile(c.facts)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	check := policy.OfflineCheck{Signer: c.key, Facts: f, Noop: c.noop, Resolver: scope.HostResolver()}
	switch {
	case c.request != "":
		if check.Request, err = readPolicyCheckRequest(c.request, os.Stdin); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
	default:
		if check.Manifest, err = manifest.Load(c.manifest); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
	}
	rep, err := p.CheckOffline(a.ctx, check)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	code := protocol.ExitOK
	verdict := "allowed: an agent with these facts would run it"
	switch {
	case !rep.Targeted:
		code, verdict = protocol.ExitNoMatch, "not targeted: the request's targets or filter leave a host with these facts out"
	case !rep.Allowed():
		code, verdict = protocol.ExitFailed, "forbidden: an agent with these facts would refuse it"
	}
	if c.json || c.yaml {
		doc := struct {
			*policy.CheckReport
			Allowed bool   `json:"allowed"`
			Verdict string `json:"verdict"`
		}{rep, code == protocol.ExitOK, verdict}
		if err := a.printDoc(doc, c.yaml); err != nil {
			return err
		}
	} else {
		for _, d := range rep.Decisions {
			fmt.Fprintln(a.Stdout, d.String())
		}
		fmt.Fprintf(a.Stdout, "signer %s: %s\n", rep.Signer, verdict)
	}
	if code != protocol.ExitOK {
		return program.Exit(code, nil)
	}
	return nil
}

// readPolicyCheckRequest reads a request file, or stdin for "-", bounded.
func readPolicyCheckRequest(path string, stdin io.Reader) ([]byte, error) {
	r := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("request file: %w", err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxPolicyCheckRequest+1))
	if err != nil {
		return nil, fmt.Errorf("request file %s: %w", path, err)
	}
	if len(b) > maxPolicyCheckRequest {
		return nil, fmt.Errorf("request file %s: larger than %d bytes", path, maxPolicyCheckRequest)
	}
	return b, nil
}
