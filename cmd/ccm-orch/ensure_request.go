package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

// requestStdin is where "ensure --request -" reads; tests replace it.
var requestStdin io.Reader = os.Stdin

// maxRequestFileBytes bounds a request document read by --request.
const maxRequestFileBytes = protocol.DefaultMaxBytes

// registerEnsureRequest adds "ensure --request FILE": a CCM ensure request
// document (the one "ccm ensure api pipe" reads) sent to the selected hosts
// as the fleet request's ensure body. It is the default subcommand of
// "ensure", so "ccm-orch ensure --request FILE" needs no type; "ccm-orch
// ensure request --request FILE" is the same.
func (a *app) registerEnsureRequest(ens *fisk.CmdClause) {
	cmd := ens.Command("request", "Send a CCM ensure request document ("+protocol.EnsureRequestProtocol+", JSON or YAML) to every selected host").Default()
	var (
		file string
		set  bool
	)
	cmd.Flag("request", "File holding the request document, or - for stdin").PlaceHolder("FILE|-").IsSetByUser(&set).StringVar(&file)
	c := &runFlags{}
	c.register(cmd, runFlagOptions{noop: true})
	cmd.Action(func(*fisk.ParseContext) error {
		if set && file == "" {
			// The command line parser reads a lone "-" as an empty value.
			file = "-"
		}
		if file == "" {
			return usageError(errors.New("ensure needs a resource type (file, exec, package, service, archive, scaffold) or --request FILE"))
		}
		req, err := c.request()
		if err != nil {
			return usageError(err)
		}
		if req.Ensure, err = readEnsureRequest(file); err != nil {
			return usageError(err)
		}
		// Refuse what every agent would refuse before connecting.
		if err := orchestrator.CheckEnsure(req.Ensure); err != nil {
			return usageError(err)
		}
		return a.send(c, req, renderResult)
	})
}

// readEnsureRequest reads and strictly decodes the request document in
// file ("-": stdin), bounded to maxRequestFileBytes.
func readEnsureRequest(file string) (*protocol.EnsureRequest, error) {
	var r io.Reader
	name := file
	if file == "-" {
		r, name = requestStdin, "stdin"
	} else {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("--request: %w", err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxRequestFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("--request %s: %w", name, err)
	}
	if len(data) > maxRequestFileBytes {
		return nil, fmt.Errorf("--request %s: more than %d bytes", name, maxRequestFileBytes)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("--request %s: %w", name, errors.New("empty document"))
	}
	req, _, err := protocol.DecodeEnsureRequest(data, protocol.Limits{MaxBytes: maxRequestFileBytes})
	if err != nil {
		return nil, fmt.Errorf("--request %s: %w", name, err)
	}
	return req, nil
}
