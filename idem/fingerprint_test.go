package idem_test

import (
	"encoding/json"
	"testing"

	"github.com/zudojs/bank/idem"
)

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		`{"to":2,"from":1}`:                      `{"from":1,"to":2}`,
		` { "b" : [ {"y":1,"x":2} ], "a":null }`: `{"a":null,"b":[{"x":2,"y":1}]}`,
		`"<&>"`:                                  `"<&>"`,
		`1e6`:                                    `1e6`,
	} {
		got, err := idem.Canonical([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("Canonical(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{``, `{`, `{} {}`, `{"a":}`} {
		if _, err := idem.Canonical([]byte(bad)); err == nil {
			t.Errorf("Canonical(%q) accepted invalid JSON", bad)
		}
	}
}

func TestFingerprintCoversMethodAndPath(t *testing.T) {
	a, _ := idem.Fingerprint("POST", "/transfers", []byte(`{}`))
	b, _ := idem.Fingerprint("POST", "/refunds", []byte(`{}`))
	c, _ := idem.Fingerprint("PUT", "/transfers", []byte(`{}`))
	if a == b || a == c {
		t.Fatal("method and path must change the fingerprint")
	}
}

// FuzzFingerprint: reordering an object's keys never changes the hash; a
// changed value always does.
func FuzzFingerprint(f *testing.F) {
	f.Add(int64(1), int64(2), int64(1000000), "note")
	f.Add(int64(-5), int64(0), int64(1<<62), "")
	f.Add(int64(3), int64(3), int64(0), "ü\"\\<")
	f.Fuzz(func(t *testing.T, from, to, amount int64, note string) {
		forward, _ := json.Marshal(map[string]any{"from": from, "to": to, "amountKobo": amount, "note": note})
		backward := []byte(`{"note":` + mustJSON(note) + `,"amountKobo":` + mustJSON(amount) + `,"to":` + mustJSON(to) + `,"from":` + mustJSON(from) + `}`)
		h1, err1 := idem.Fingerprint("POST", "/transfers", forward)
		h2, err2 := idem.Fingerprint("POST", "/transfers", backward)
		if err1 != nil || err2 != nil || h1 != h2 {
			t.Fatalf("key order changed the fingerprint: %s vs %s (%v %v)", forward, backward, err1, err2)
		}
		changed, _ := json.Marshal(map[string]any{"from": from, "to": to, "amountKobo": amount + 1, "note": note})
		h3, _ := idem.Fingerprint("POST", "/transfers", changed)
		if h3 == h1 {
			t.Fatalf("a changed amount kept the fingerprint: %s", changed)
		}
		changed, _ = json.Marshal(map[string]any{"from": from, "to": to, "amountKobo": amount, "note": note + "x"})
		if h4, _ := idem.Fingerprint("POST", "/transfers", changed); h4 == h1 {
			t.Fatalf("a changed note kept the fingerprint: %s", changed)
		}
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
