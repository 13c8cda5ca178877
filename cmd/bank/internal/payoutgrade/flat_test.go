package payoutgrade

import (
	"testing"
	"time"
)

// TestFlat: rail-down notes waits that did not grow (the Go corpus
// worker's, 100 ms each: its enquiry's clear answer reset its backoff),
// and not a backoff, a wait at the contract's second, or too few tries.
func TestFlat(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	for _, c := range []struct {
		gaps []time.Duration
		flat bool
	}{
		{ms(123, 107, 102, 104, 102, 101, 101, 101, 103), true},
		{ms(107, 162, 144, 133, 106, 104, 102, 156, 155), true},
		{ms(100, 200, 400, 800), false},
		{ms(60, 30, 250, 700), false}, // random waits, growing
		{ms(900, 1000, 1000), false},  // at the contract's second
		{ms(100, 100), false},         // too few to tell
	} {
		if got := flat(c.gaps); got != c.flat {
			t.Errorf("flat(%v) = %v, want %v", c.gaps, got, c.flat)
		}
	}
}
