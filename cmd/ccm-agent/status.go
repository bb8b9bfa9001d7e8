package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/choria-io/fisk"
	goyaml "github.com/goccy/go-yaml"

	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"github.com/ccm-fleet/ccm/cmd/internal/resflags"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/catalog"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// unsupportedStatus is what CCM prints for exec and archive.
const unsupportedStatus = "Status for 'exec' and 'archive' resources is not supported yet due to them relying heavily on specific properties and may require additional context for accurate status determination."

func (a *app) registerStatus(cli *fisk.Application) {
	var (
		typeName, name string
		js             bool
		ff             factFlags
	)
	cmd := cli.Command("status", "Show the current state of one resource on this host, changing nothing").Alias("info")
	cmd.Arg("type", "Resource type: file, package, service (exec and archive: not supported, as in CCM)").Required().EnumVar(&typeName, append(resflags.StatusTypes(resflags.StatusRead), resflags.StatusTypes(resflags.StatusUnsupported)...)...)
	cmd.Arg("name", "Resource name: a path, a package or a service").Required().StringVar(&name)
	cmd.Flag("json", "Print JSON instead of YAML").UnNegatableBoolVar(&js)
	ff.register(cmd)
	cmd.Action(func(*fisk.ParseContext) error { return a.status(typeName, name, js, &ff) })
}

// status reads the state of one resource through a noop ensure of it: its
// state as found, nothing changed.
func (a *app) status(typeName, name string, js bool, ff *factFlags) error {
	t, _ := resflags.Lookup(typeName)
	if t.Status != resflags.StatusRead {
		fmt.Fprintln(a.Stdout, unsupportedStatus)
		return nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fs, err := ff.gather(ctx)
	if err != nil {
		return err
	}
	props := map[string]any{"name": name}
	if ensure := statusEnsure(t.StatusEnsure, name); ensure != "" {
		props["ensure"] = ensure
	}
	if err := localDefaults(typeName, props); err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	eng, unsupervise, err := localEngine(ctx, a.Logger(), localInstance, a.packageLockTimeout)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	defer unsupervise()
	ev, err := eng.Ensure(ctx, engine.RunOptions{Noop: true, Env: templates.New(fs, nil)}, engine.Spec{Type: typeName, Properties: props})
	if err != nil {
		return program.Exit(protocol.ExitError, fmt.Errorf("could not get status: %w", err))
	}
	if ev.Failed || ev.Status == nil {
		return program.Exit(protocol.ExitError, fmt.Errorf("could not get status: %v", ev.Errors))
	}
	// CCM prints the resource's metadata: what was found on the host.
	info, err := metadata(ev.Status)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	if js {
		raw, err := rawMetadata(ev.Status)
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		var b bytes.Buffer
		if err := json.Indent(&b, raw, "", "  "); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		fmt.Fprintln(a.Stdout, b.String())
		return nil
	}
	y, err := goyaml.Marshal(info)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	fmt.Fprintln(a.Stdout, string(y))
	return nil
}

// rawMetadata is the JSON of the "metadata" member of a state document;
// the whole document when it has none.
func rawMetadata(st protocol.State) (json.RawMessage, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if m, ok := doc["metadata"]; ok && len(m) > 0 && m[0] == '{' {
		return m, nil
	}
	return b, nil
}

// metadata is the "metadata" member of a state document, its keys in the
// document's order; the whole state when it has none.
func metadata(st protocol.State) (goyaml.MapSlice, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := ordered(dec)
	if err != nil {
		return nil, err
	}
	doc, _ := v.(goyaml.MapSlice)
	for _, it := range doc {
		if it.Key == "metadata" {
			if m, ok := it.Value.(goyaml.MapSlice); ok {
				return m, nil
			}
		}
	}
	return doc, nil
}

// ordered decodes the next JSON value keeping the order of object keys.
func ordered(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			var out goyaml.MapSlice
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := ordered(dec)
				if err != nil {
					return nil, err
				}
				out = append(out, goyaml.MapItem{Key: k, Value: v})
			}
			_, err := dec.Token()
			return out, err
		case '[':
			var out []any
			for dec.More() {
				v, err := ordered(dec)
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			}
			_, err := dec.Token()
			return out, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i, nil
		}
		return t.Float64()
	default:
		return t, nil
	}
}

// statusEnsure is the ensure value status reads a resource named name
// with, "" for the type's default.
func statusEnsure(e catalog.StatusEnsure, name string) string {
	switch e {
	case catalog.StatusAbsent:
		// Reads the resource without asking whether it could be made
		// present: one not there is reported "absent" (as CCM does),
		// not an error.
		return "absent"
	case catalog.StatusFound:
		if fi, err := os.Lstat(name); err == nil && fi.IsDir() {
			return "directory"
		}
		return "present"
	}
	return ""
}
