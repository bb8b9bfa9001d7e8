package agent

import (
	"testing"
	"time"
)

func TestRegistryRetriesBackOffToAHeartbeat(t *testing.T) {
	hb := 30 * time.Second
	var got []time.Duration
	d := time.Duration(0)
	for range 7 {
		d = nextRetry(d, hb)
		got = append(got, d)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, hb, hb}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("retries %v, want %v", got, want)
		}
	}
	if d := nextRetry(0, 100*time.Millisecond); d != 100*time.Millisecond {
		t.Errorf("a heartbeat shorter than the first retry bounds it: %s", d)
	}
}

func TestRegistryWritesSpreadByATenth(t *testing.T) {
	hb := 30 * time.Second
	r := &registrar{a: &Agent{cfg: Config{Heartbeat: hb}}}
	check := func(what string, center time.Duration) {
		t.Helper()
		lo, hi := center-center/10, center+center/10
		seen := map[time.Duration]bool{}
		for range 200 {
			w := r.wait()
			if w < lo || w > hi {
				t.Fatalf("%s: wait %s outside [%s, %s]", what, w, lo, hi)
			}
			seen[w] = true
		}
		if len(seen) < 100 {
			t.Errorf("%s: 200 waits took only %d values: agents started together would stay in step", what, len(seen))
		}
	}
	check("healthy", hb)
	r.retry = 4 * time.Second
	check("after failures", 4*time.Second)
}
