package client

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"testing"
)

var uuid4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestNewKey(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		k := NewKey()
		if !uuid4.MatchString(k) {
			t.Fatalf("%q is not a version 4 UUID", k)
		}
		if seen[k] {
			t.Fatalf("%q made twice", k)
		}
		seen[k] = true
	}
}

// TestNewKeyFrom: a seeded source gives the same keys every run, drawn
// as the lessons have always drawn theirs (so their goldens keep their
// keys when they make them here).
func TestNewKeyFrom(t *testing.T) {
	a, b := rand.New(rand.NewPCG(2026, 924)), rand.New(rand.NewPCG(2026, 924))
	lesson := func(r *rand.Rand) string { // scenarios' newKey, as it was
		return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", r.Uint32(), r.Uint32()&0xffff,
			r.Uint32()&0xfff, 0x8000|r.Uint32()&0x3fff, r.Uint64()&0xffffffffffff)
	}
	for range 100 {
		k := NewKeyFrom(a)
		if want := lesson(b); k != want {
			t.Fatalf("NewKeyFrom drew %q where the lessons draw %q", k, want)
		}
		if !uuid4.MatchString(k) {
			t.Fatalf("%q is not a version 4 UUID", k)
		}
	}
}
