package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/choria-io/fisk"
	goyaml "github.com/goccy/go-yaml"

	"github.com/ccm-fleet/ccm/cmd/internal/connflags"
	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"github.com/ccm-fleet/ccm/continuous"
	"github.com/ccm-fleet/ccm/facts"
	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// hieraFlags are the flags of "hiera parse" and "hiera facts", with CCM's
// names.
type hieraFlags struct {
	input     string
	pairs     []string
	factsFile string
	envFacts  bool
	system    bool
	query     string
	yaml      bool
	env       bool
	envPrefix string
	data      map[string]string
	dataFile  string
	// conn is the NATS connection a kv:// input is read with.
	conn *connflags.Flags
}

// registerFactSources adds the fact flags both commands share.
func (h *hieraFlags) registerFactSources(cmd *fisk.CmdClause) {
	cmd.Arg("fact", "Facts as key=value, over every other source").StringsVar(&h.pairs)
	cmd.Flag("facts", "YAML or JSON file of facts").PlaceHolder("FILE").StringVar(&h.factsFile)
	cmd.Flag("env-facts", "The process environment as facts").Short('E').UnNegatableBoolVar(&h.envFacts)
	// CCM's documentation spells this flag; this host's facts are always
	// gathered, as CCM's command does.
	cmd.Flag("system-facts", "This host's facts (always gathered; accepted for CCM's command lines)").Short('S').UnNegatableBoolVar(&h.system)
	cmd.Flag("query", "Print only the value at this dotted path (e.g. web.listen_port)").StringVar(&h.query)
}

func (a *app) registerHiera(cli *fisk.Application) {
	hiera := cli.Command("hiera", "Resolve hierarchical data (data, hierarchy and overrides) the way manifests do")

	p := &hieraFlags{data: map[string]string{}}
	parse := hiera.Command("parse", "Resolve a YAML or JSON data file with facts and print the data as JSON").Alias("resolve")
	parse.Arg("input", "YAML or JSON data, hierarchy and overrides: a file, an http(s):// URL (user:password@ for basic auth, #sha256=HEX to pin it) or kv://bucket/key (with --server or --context)").Envar("HIERA_INPUT").Required().StringVar(&p.input)
	p.registerFactSources(parse)
	parse.Flag("data", "Data value key=value over the resolved data (always a string; repeatable)").Short('D').StringMapVar(&p.data)
	parse.Flag("data-file", "YAML or JSON file of data over the resolved data").PlaceHolder("FILE").StringVar(&p.dataFile)
	parse.Flag("yaml", "Print YAML instead of JSON").UnNegatableBoolVar(&p.yaml)
	parse.Flag("env", "Print PREFIX_KEY=value lines, one per top-level key").UnNegatableBoolVar(&p.env)
	parse.Flag("env-prefix", "Prefix of the --env variable names").Default("HIERA").StringVar(&p.envPrefix)
	p.conn = connflags.Register(parse)
	parse.Action(func(*fisk.ParseContext) error { return a.hieraParse(p) })

	f := &hieraFlags{}
	fc := hiera.Command("facts", "Print the facts hiera parse resolves with, as JSON")
	f.registerFactSources(fc)
	fc.Action(func(*fisk.ParseContext) error { return a.hieraFacts(f) })
}

// resolveFacts gathers this host's facts, then the environment (-E), then
// the facts file, then the key=value arguments, each over the one before,
// as CCM's hiera command does.
func (h *hieraFlags) resolveFacts(ctx context.Context) (map[string]any, error) {
	fs, err := facts.Gather(ctx, facts.Options{})
	if err != nil {
		return nil, program.Exit(protocol.ExitError, err)
	}
	if h.envFacts {
		for _, kv := range os.Environ() {
			if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
				fs[k] = v
			}
		}
	}
	if err := facts.Merge(fs, facts.Options{File: h.factsFile, Pairs: h.pairs}); err != nil {
		return nil, program.Exit(protocol.ExitError, err)
	}
	return fs, nil
}

// query returns the value at the dotted path h.query of v (v itself when
// no query is given).
func (h *hieraFlags) queryValue(v map[string]any) (any, error) {
	if h.query == "" {
		return v, nil
	}
	got, ok := templates.Walk(v, h.query)
	if !ok {
		return nil, program.Exit(protocol.ExitError, fmt.Errorf("--query %q: no value at that path", h.query))
	}
	return got, nil
}

func (a *app) hieraFacts(h *hieraFlags) error {
	fs, err := h.resolveFacts(context.Background())
	if err != nil {
		return err
	}
	out, err := h.queryValue(fs)
	if err != nil {
		return err
	}
	if h.query != "" {
		if s, ok := out.(string); ok {
			fmt.Fprintln(a.Stdout, s)
			return nil
		}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	fmt.Fprintln(a.Stdout, string(b))
	return nil
}

func (a *app) hieraParse(h *hieraFlags) error {
	ctx := context.Background()
	kv := &lazyKV{flags: h.conn, log: a.Logger()}
	defer kv.Close()
	m, err := hieraRef{flag: "hiera", conn: kv}.load(ctx, h.input)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	manifest.LogAnnotationWarnings(a.warnLogger(), m.AnnotationWarnings())
	fs, err := h.resolveFacts(ctx)
	if err != nil {
		return err
	}
	data, err := readDataFile(h.dataFile)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	if len(h.data) > 0 && data == nil {
		data = map[string]any{}
	}
	for k, v := range h.data {
		data[k] = v
	}
	r, err := m.Resolve(manifest.RunOptions{Facts: fs, Data: data})
	if err != nil {
		name := h.input
		if u, perr := continuous.ParseDataURL(h.input); perr == nil && isRemoteRef(h.input) {
			name = u.String() // no password
		}
		return program.Exit(protocol.ExitError, fmt.Errorf("hiera %s: %w", name, err))
	}
	res := r.Data
	if res == nil {
		res = map[string]any{}
	}
	out, err := h.queryValue(res)
	if err != nil {
		return err
	}
	var text string
	switch {
	case h.yaml:
		// CCM prints with this library: its layout (lists not indented
		// below their key, two spaces) is what scripts see.
		b, err := goyaml.Marshal(wholeNumbers(out))
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		text = string(b)
	case h.env:
		var sb strings.Builder
		if err := writeEnv(&sb, h.envPrefix, out); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		text = sb.String()
	default:
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		text = string(b)
	}
	fmt.Fprintln(a.Stdout, strings.TrimSpace(text))
	return nil
}

// writeEnv prints data as environment variables the way CCM does: one
// PREFIX_KEY=value line per top-level key (the key upper-cased), strings
// and whole numbers as they are, other numbers with six decimals, lists,
// maps and booleans as JSON; a value that is not a map is PREFIX_VALUE
// as JSON. Lines are sorted by key so the output is stable.
func writeEnv(w io.Writer, prefix string, v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		j, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s_VALUE=%s\n", prefix, j)
		return err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		key := prefix + "_" + strings.ToUpper(k)
		var val string
		switch t := m[k].(type) {
		case string:
			val = t
		case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
			val = fmt.Sprint(t)
		case float64:
			// YAML gives CCM whole numbers as integers; the decoder here
			// gives float64 for every number.
			if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
				val = strconv.FormatInt(int64(t), 10)
			} else {
				val = fmt.Sprintf("%f", t)
			}
		case float32:
			val = fmt.Sprintf("%f", t)
		default:
			j, err := json.Marshal(t)
			if err != nil {
				return err
			}
			val = string(j)
		}
		if _, err := fmt.Fprintf(w, "%s=%s\n", key, val); err != nil {
			return err
		}
	}
	return nil
}

// wholeNumbers returns v with every whole float64 (the decoder's type for
// every number) as an int64, so YAML prints 443 where the input said 443,
// as CCM does.
func wholeNumbers(v any) any {
	switch t := v.(type) {
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return int64(t)
		}
		return t
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = wholeNumbers(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = wholeNumbers(e)
		}
		return out
	default:
		return v
	}
}
