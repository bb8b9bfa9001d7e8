package main

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

// maxHostsFileBytes bounds a --hosts-file.
const maxHostsFileBytes = 4 << 20

// targetFlags narrow the hosts a filter selects: --hosts-file,
// --hosts-from with --outcome, and --sample with --seed.
type targetFlags struct {
	hostsFile string
	hostsFrom string
	outcome   string
	sample    string
	seed      uint64
	seedSet   bool
}

func (t *targetFlags) register(cmd *fisk.CmdClause) {
	cmd.Flag("hosts-file", "Only the hosts this file lists, one identity a line (blank lines and # comments ignored); ANDed with --where, --host and --select").
		PlaceHolder("FILE").StringVar(&t.hostsFile)
	cmd.Flag("hosts-from", "Only the hosts of this earlier request (its id) whose outcome is --outcome, as history holds the run").
		PlaceHolder("REQUEST_ID").StringVar(&t.hostsFrom)
	cmd.Flag("outcome", "With --hosts-from, the outcome to take hosts by: "+strings.Join(orchestrator.HostOutcomes, ", ")+" (default failed)").
		PlaceHolder("OUTCOME").StringVar(&t.outcome)
	cmd.Flag("sample", "Only a random N hosts (or N% of them) of those selected, chosen by --seed").
		PlaceHolder("N|N%").StringVar(&t.sample)
	cmd.Flag("seed", "With --sample, the seed that chooses the hosts: the same seed picks the same hosts again (default: a random seed, printed)").
		PlaceHolder("SEED").IsSetByUser(&t.seedSet).Uint64Var(&t.seed)
}

// narrowing reads the flags that need no connection (the hosts file, the
// sample) into a Narrowing, nil when none narrows; every error is a usage
// error. The hosts of --hosts-from are added by resolve.
func (t *targetFlags) narrowing() (*orchestrator.Narrowing, error) {
	switch {
	case t.outcome != "" && t.hostsFrom == "":
		return nil, errors.New("--outcome needs --hosts-from: the request whose hosts to take")
	case t.seedSet && t.sample == "":
		return nil, errors.New("--seed needs --sample: the seed chooses a sample")
	case t.outcome != "" && !slices.Contains(orchestrator.HostOutcomes, t.outcome):
		return nil, fmt.Errorf("--outcome %q: use one of %s", t.outcome, strings.Join(orchestrator.HostOutcomes, ", "))
	}
	if t.hostsFrom != "" {
		if err := protocol.ValidateRequestID(t.hostsFrom); err != nil {
			return nil, fmt.Errorf("--hosts-from: %w", protocol.Plain(err))
		}
	}
	n := &orchestrator.Narrowing{}
	if t.hostsFile != "" {
		ids, err := readHostsFile(t.hostsFile)
		if err != nil {
			return nil, err
		}
		n.Only = ids
	}
	if t.sample != "" {
		size, pct, err := parseSample(t.sample)
		if err != nil {
			return nil, err
		}
		n.Sample, n.SamplePercent = size, pct
		n.Seed = t.seed
		if !t.seedSet {
			var b [8]byte
			if _, err := rand.Read(b[:]); err != nil {
				return nil, fmt.Errorf("--sample: a random seed: %w", err)
			}
			// Kept below 2^53 so that it survives JSON readers that
			// read numbers as floats.
			n.Seed = binary.BigEndian.Uint64(b[:]) >> 11
		}
	}
	if n.Only == nil && !t.sampling() && t.hostsFrom == "" {
		return nil, nil
	}
	return n, nil
}

func (t *targetFlags) sampling() bool { return t.sample != "" }

// resolve narrows n (from narrowing) to the hosts of --hosts-from with
// --outcome (default failed), read from history with c; n nil means no
// narrowing. An unknown request or no host with the outcome is an error:
// nothing is sent.
func (t *targetFlags) resolve(ctx context.Context, c *orchestrator.Client, n *orchestrator.Narrowing) error {
	if t.hostsFrom == "" || n == nil {
		return nil
	}
	hosts, err := c.HostsFrom(ctx, t.hostsFrom, cmp.Or(t.outcome, orchestrator.OutcomeFailed))
	var missing *orchestrator.MissingRequestError
	switch {
	case errors.As(err, &missing):
		return fmt.Errorf("--hosts-from %s: history has no record of that request (it was never made, has expired, or was not kept): nothing was sent", t.hostsFrom)
	case err != nil:
		return fmt.Errorf("--hosts-from %s: %w: nothing was sent", t.hostsFrom, err)
	}
	if n.Only == nil {
		n.Only = hosts
		return nil
	}
	n.Only = slices.DeleteFunc(n.Only, func(id string) bool { return !slices.Contains(hosts, id) })
	if len(n.Only) == 0 {
		return fmt.Errorf("--hosts-from %s: none of its hosts with outcome %s is in --hosts-file %s: nothing was sent", t.hostsFrom, cmp.Or(t.outcome, orchestrator.OutcomeFailed), t.hostsFile)
	}
	return nil
}

// renderSample says on w, the error stream, how the hosts were sampled and
// the seed that picks them again.
func renderSample(w io.Writer, s *orchestrator.SampleReport) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "ccm-orch: sampled %d of %s with --seed %d (the same seed picks the same hosts again)\n", s.Kept, countHosts(s.Of), s.Seed)
}

// readHostsFile reads a --hosts-file: one identity a line, blank lines
// and # comments ignored; an invalid identity is refused naming its line,
// and a file naming no host is refused.
func readHostsFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--hosts-file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxHostsFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("--hosts-file %s: %w", path, err)
	}
	if len(data) > maxHostsFileBytes {
		return nil, fmt.Errorf("--hosts-file %s: larger than %d bytes", path, maxHostsFileBytes)
	}
	var ids []string
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(make([]byte, 0, 4096), maxHostsFileBytes)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		if err := protocol.ValidateIdentity(text); err != nil {
			return nil, fmt.Errorf("--hosts-file %s line %d: %w", path, line, protocol.Plain(err))
		}
		ids = append(ids, text)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--hosts-file %s: %w", path, err)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("--hosts-file %s lists no host", path)
	}
	return ids, nil
}

// parseSample reads --sample: "N" or "N%".
func parseSample(s string) (size, percent int, err error) {
	num, pct := strings.CutSuffix(s, "%")
	n, err := strconv.Atoi(num)
	switch {
	case err != nil || n < 1:
		return 0, 0, fmt.Errorf("--sample %q: use a whole number of hosts such as 10, or a percentage such as 25%%", s)
	case pct && n > 100:
		return 0, 0, fmt.Errorf("--sample %q: a percentage is at most 100%%", s)
	case pct:
		return 0, n, nil
	default:
		return n, 0, nil
	}
}
