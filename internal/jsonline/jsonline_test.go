package jsonline_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ccm-fleet/ccm/internal/jsonline"
)

func TestAppendStringAsEncodingJSON(t *testing.T) {
	cases := []string{
		"", "plain", "file#/etc/motd", `quote " and \ backslash`, "a\b\f\n\r\t\x00\x01\x1f\x7f end",
		"<script>&amp;</script>", "é ü 日本 😀", "line\u2028sep\u2029para", "bad \xff\xfe utf8 \xc3",
		"cut \xe6\x97", "\xed\xa0\x80 surrogate", "ends with \\",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonline.AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("AppendString(%q) = %s, encoding/json writes %s", s, got[1:], want)
		}
	}
}

func TestAppendTimeAsMarshalJSON(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(2026, 11, 29, 13, 5, 0, 0, time.UTC),
		time.Date(2026, 11, 29, 13, 5, 0, 123456789, time.UTC),
		time.Date(2026, 11, 29, 13, 5, 0, 120000000, time.FixedZone("", 3600+1800)),
		{},
	} {
		want, err := tm.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		got, err := jsonline.AppendTime(nil, tm)
		if err != nil || string(got) != string(want) {
			t.Errorf("AppendTime(%v) = %s, %v; MarshalJSON writes %s", tm, got, err, want)
		}
	}
	far := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := far.MarshalJSON(); err == nil {
		t.Fatal("MarshalJSON took the year 10000")
	}
	if got, err := jsonline.AppendTime(nil, far); err == nil {
		t.Errorf("AppendTime took the year 10000: %s", got)
	}
}
