package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ccm-fleet/ccm/jsstore"
)

func TestPerHostCPU(t *testing.T) {
	floor := Row{Name: "floor", Agents: 1000, MedianMS: 25, BenchCPUSeconds: 0.04}
	floor.perHost()
	if floor.CentralCPUPerHostMS != 0.04 || floor.CentralFloorRatio != 0 {
		t.Fatalf("floor: central %v ms/host, ratio %v; want 0.04 and none", floor.CentralCPUPerHostMS, floor.CentralFloorRatio)
	}
	signed := Row{Name: "floor-signed", Agents: 1000, MedianMS: 50, BenchCPUSeconds: 0.11}
	signed.perHost()
	signed.ratios(&floor, nil)
	if signed.FloorRatio != 2 || signed.CentralFloorRatio != 2.75 || signed.SignedFloorRatio != 0 {
		t.Errorf("floor-signed: x floor %v, central x floor %v, x signed %v; want 2, 2.75 and none",
			signed.FloorRatio, signed.CentralFloorRatio, signed.SignedFloorRatio)
	}
	cli := Row{Name: "noop-cli", Agents: 1000, MedianMS: 150, AgentsCPUSeconds: 0.3, BenchCPUSeconds: 0.09, CPUSeconds: 0.13}
	cli.perHost()
	cli.ratios(&floor, &signed)
	if cli.AgentCPUPerHostMS != 0.3 {
		t.Errorf("agent ms/host = %v, want 0.3", cli.AgentCPUPerHostMS)
	}
	if cli.CentralCPUPerHostMS != 0.22 {
		t.Errorf("central ms/host = %v, want 0.22 (broker 0.09 s + ccm-orch 0.13 s over 1000 hosts)", cli.CentralCPUPerHostMS)
	}
	if cli.CentralFloorRatio != 5.5 || cli.FloorRatio != 6 {
		t.Errorf("central x floor = %v, x floor = %v; want 5.5 and 6", cli.CentralFloorRatio, cli.FloorRatio)
	}
	if cli.CentralSignedFloorRatio != 2 || cli.SignedFloorRatio != 3 {
		t.Errorf("central x signed = %v, x signed = %v; want 2 and 3", cli.CentralSignedFloorRatio, cli.SignedFloorRatio)
	}
	unmeasured := Row{Name: "noop", Agents: 1000, MedianMS: 150}
	unmeasured.ratios(&floor, &Row{Name: "floor-signed"})
	if unmeasured.FloorRatio != 6 || unmeasured.SignedFloorRatio != 0 {
		t.Errorf("ratios against an unmeasured signed floor: x floor %v, x signed %v; want 6 and none", unmeasured.FloorRatio, unmeasured.SignedFloorRatio)
	}
	none := Row{Name: "agents"}
	none.perHost()
	if none.AgentCPUPerHostMS != 0 || none.CentralCPUPerHostMS != 0 {
		t.Errorf("a row without a fleet size got per-host CPU: %+v", none)
	}
}

func TestTableShowsAccounting(t *testing.T) {
	var out bytes.Buffer
	PrintTable(&out, []Row{
		{Name: "noop", Agents: 20000, Rounds: 3, MedianMS: 9000, P90MS: 9500, Replied: 20000},
		{Name: "agents", Agents: 20000, Rounds: 1, MedianMS: 60000, P90MS: 60000},
	})
	lines := strings.Split(out.String(), "\n")
	if !strings.Contains(lines[0], "replied") || !strings.Contains(lines[0], "unexp") {
		t.Fatalf("header lacks the accounting columns: %q", lines[0])
	}
	if f := strings.Fields(lines[1]); !strings.Contains(strings.Join(f, " "), "9500 20000 0") {
		t.Errorf("noop line should show 20000 replied and 0 unexpected: %q", lines[1])
	}
	if strings.Contains(lines[2], " 0 ") {
		t.Errorf("a row without accounting shows a 0: %q", lines[2])
	}
}

func TestLayoutSpreadsLargeFleets(t *testing.T) {
	for _, c := range []struct {
		n     int
		limit uint64
		want  layout
	}{
		{n: 5, limit: 20000, want: layout{brokers: 1, agentProcs: 1, responderProcs: 1}},
		{n: 3290, limit: 20000, want: layout{brokers: 1, agentProcs: 1, responderProcs: 1}},
		{n: 5000, limit: 20000, want: layout{brokers: 1, agentProcs: 2, responderProcs: 1}},
		{n: 20000, limit: 20000, want: layout{brokers: 3, agentProcs: 7, responderProcs: 2}},
		{n: 20000, limit: 1 << 20, want: layout{brokers: 1, agentProcs: 1, responderProcs: 1}},
		{n: 50000, limit: 20000, want: layout{brokers: 3, agentProcs: 16, responderProcs: 3}},
	} {
		if got := layoutFor(c.n, c.limit); got != c.want {
			t.Errorf("layoutFor(%d, %d) = %+v, want %+v", c.n, c.limit, got, c.want)
		}
	}
	got := parts(20000, 3)
	if got[0]+got[1]+got[2] != 20000 || got[0]-got[2] > 1 {
		t.Errorf("parts(20000, 3) = %v", got)
	}
}

func TestDeadlinesGrowPastTwentyThousandAgents(t *testing.T) {
	base := deadlinesFor(0)
	if base != deadlinesFor(deadlineFleet) {
		t.Errorf("deadlines change below %d agents: %+v and %+v", deadlineFleet, base, deadlinesFor(deadlineFleet))
	}
	if base.reply != time.Minute || base.setup != 5*time.Minute || base.start != 10*time.Minute || base.registryTTL != jsstore.DefaultRegistryTTL {
		t.Errorf("base deadlines %+v", base)
	}
	big := deadlinesFor(50000)
	if big.reply != 150*time.Second || big.round != 5*time.Minute || big.settle != 5*time.Minute || big.start != 25*time.Minute || big.registryTTL != 225*time.Second {
		t.Errorf("deadlines at 50,000 agents %+v, want two and a half times %+v", big, base)
	}
}

func TestIdleNote(t *testing.T) {
	got := idleNote(10*time.Second, 2*time.Second, time.Second, 1000)
	want := "at rest for 10s, no request: the agents kept 0.200 cores busy (200.0 µs per host per second), the center 0.100 cores"
	if !strings.HasPrefix(got, want) {
		t.Fatalf("idle note:\n got %s\nwant %s...", got, want)
	}
}

func TestNiced(t *testing.T) {
	args := [][]string{{"simulate", "--count", "3"}, {"simulate", "--count", "4"}}
	bin, got := niced(0, "/bin/ccm-agent", args)
	if bin != "/bin/ccm-agent" || !reflect.DeepEqual(got, args) {
		t.Errorf("niced(0) = %s %q, want the command unchanged", bin, got)
	}
	bin, got = niced(10, "/bin/ccm-agent", args)
	want := [][]string{{"-n", "10", "/bin/ccm-agent", "simulate", "--count", "3"}, {"-n", "10", "/bin/ccm-agent", "simulate", "--count", "4"}}
	if bin != "nice" || !reflect.DeepEqual(got, want) {
		t.Errorf("niced(10) = %s %q, want nice %q", bin, got, want)
	}
	if args[0][0] != "simulate" {
		t.Errorf("niced changed its argument: %q", args)
	}
}

func TestNiceIsValidated(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "bin")
	if err := os.WriteFile(bin, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	base := Config{AgentBin: bin, OrchBin: bin, BenchBin: bin}.withDefaults()
	for _, c := range []struct {
		nice int
		want string
	}{{0, ""}, {19, ""}, {-1, "nice -1 must be between 0"}, {20, "nice 20 must be between 0"}} {
		cfg := base
		cfg.Nice = c.nice
		err := cfg.validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("nice %d: %v", c.nice, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("nice %d: err = %v, want %q", c.nice, err, c.want)
		}
	}
}
