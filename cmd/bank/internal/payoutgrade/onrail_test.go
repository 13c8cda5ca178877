package payoutgrade

import (
	"testing"
	"time"
)

// TestOnRail: the time some request was at the rail counts once however
// many were there at once, and only within the span asked about.
func TestOnRail(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	span := func(from, to int) call { return call{Sent: at(from), Answered: at(to)} }
	for _, c := range []struct {
		calls    []call
		from, to int
		want     int
	}{
		{nil, 0, 1000, 0},
		{[]call{span(100, 200), span(300, 350)}, 0, 1000, 150},
		// Overlapping, one inside another, out of order.
		{[]call{span(300, 500), span(100, 400), span(150, 160)}, 0, 1000, 400},
		// Cut at the span's ends.
		{[]call{span(-50, 50), span(950, 1100)}, 0, 1000, 100},
		{[]call{span(1200, 1300)}, 0, 1000, 0},
	} {
		if got := onRail(c.calls, at(c.from), at(c.to)); got != time.Duration(c.want)*time.Millisecond {
			t.Errorf("onRail(%v, %d, %d) = %s, want %dms", c.calls, c.from, c.to, got, c.want)
		}
	}
}
