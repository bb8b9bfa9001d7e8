package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"syscall"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// apiPipeFlags are the flags of "ensure api pipe".
type apiPipeFlags struct {
	yaml     bool
	dataFile string
	facts    factFlags
	// data are the hiera and .env sources of "ensure" (its --hiera and
	// --read-env), read as CCM's api pipe reads them.
	data *dataFlags
}

// registerEnsureAPI adds "ensure api pipe", CCM's stdin/stdout API: one
// io.choria.ccm.v1.resource.ensure.request in, one
// io.choria.ccm.v1.resource.ensure.response out. noop is the --noop of the
// parent "ensure" command; data are its ./.hiera and ./.env sources.
func (a *app) registerEnsureAPI(ens *fisk.CmdClause, noop *bool, data *dataFlags) {
	api := ens.Command("api", "CCM's stdin/stdout API for programs: ensure one resource from a request document")
	pipe := api.Command("pipe", "Read one "+protocol.EnsureRequestProtocol+" (JSON or YAML) on stdin, apply it, and write one "+
		protocol.EnsureResponseProtocol+" on stdout; a request that cannot be processed gets a response whose \"error\" says why. "+
		"The exit status is 0 whenever a response was written (read \"error\" and \"state.failed\"), 1 when none could be")
	f := &apiPipeFlags{data: data}
	pipe.Flag("yaml", "Write the response as YAML instead of JSON").UnNegatableBoolVar(&f.yaml)
	pipe.Flag("data", "YAML or JSON file of data that templates see as data.*, over the data of ./.hiera (or ensure --hiera FILE)").PlaceHolder("FILE").StringVar(&f.dataFile)
	f.facts.register(pipe)
	// CCM's spelling of --facts-file.
	pipe.Flag("facts", "Same as --facts-file").Hidden().PlaceHolder("FILE").ExistingFileVar(&f.facts.file)
	pipe.Action(func(*fisk.ParseContext) error {
		return a.apiPipe(f, *noop)
	})
}

// maxAPIRequestBytes bounds the request read from stdin.
const maxAPIRequestBytes = protocol.DefaultMaxBytes

// apiPipe answers the request on stdin. Every problem with the request, the
// facts or the data becomes the response's error; only a response that
// cannot be written is an exit status.
func (a *app) apiPipe(f *apiPipeFlags, noop bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	ev, err := a.apiEnsure(ctx, f, noop)
	b, merr := protocol.NewEnsureResponse(ev, err).Marshal(protocol.EncodingJSON)
	if merr == nil && f.yaml {
		b, merr = ccmResponseYAML(b)
	} else {
		b = append(b, '\n')
	}
	if merr != nil {
		return program.Exit(protocol.ExitError, fmt.Errorf("encoding the response: %w", merr))
	}
	if _, werr := a.Stdout.Write(b); werr != nil {
		return program.Exit(protocol.ExitError, fmt.Errorf("writing the response: %w", werr))
	}
	return nil
}

// apiEnsure reads, decodes and applies the request: the event, or the
// reason the request could not be processed.
func (a *app) apiEnsure(ctx context.Context, f *apiPipeFlags, noop bool) (*protocol.TransactionEvent, error) {
	data, err := readLimited(a.stdin(), maxAPIRequestBytes)
	if err != nil {
		return nil, fmt.Errorf("reading the request from stdin: %w", err)
	}
	req, _, err := protocol.DecodeEnsureRequest(data, protocol.Limits{MaxBytes: maxAPIRequestBytes})
	if err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	props, err := req.PropertiesMap()
	if err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	fs, err := f.facts.gather(ctx)
	if err != nil {
		return nil, errors.Unwrap(err)
	}
	f.data.log = a.warnLogger()
	hiera, err := f.data.data(fs)
	if err != nil {
		return nil, err
	}
	over, err := readDataFile(f.dataFile)
	if err != nil {
		return nil, err
	}
	if hiera == nil {
		hiera = over
	} else {
		maps.Copy(hiera, over)
	}
	environ, err := f.data.environ()
	if err != nil {
		return nil, err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	eng, unsupervise, err := localEngine(ctx, a.Logger(), localInstance, a.packageLockTimeout)
	if err != nil {
		return nil, err
	}
	defer unsupervise()
	env := templates.New(fs, hiera, templates.WithEnviron(environ), templates.WithFiles(cwd))
	ev, err := eng.Ensure(ctx, engine.RunOptions{Noop: noop, Env: env, WorkingDir: cwd},
		engine.Spec{Type: req.Type, Properties: props})
	if err != nil {
		return nil, err
	}
	return ev, nil
}

// readLimited reads r to its end, refusing more than max bytes.
func readLimited(r io.Reader, max int) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > max {
		return nil, fmt.Errorf("more than %d bytes", max)
	}
	return b, nil
}
