package pace

import (
	"testing"
	"time"
)

// TestDeadlineStretchesWithTheLoad: a limit set for a quiet machine lasts
// as set there, stretches by the load per core on a busy one (at most
// Max times), and says the machine was busy.
func TestDeadlineStretchesWithTheLoad(t *testing.T) {
	defer SetLoadForTest(0)
	SetLoadForTest(0.5)
	d := After(time.Second)
	if d.Limit() != time.Second || d.Busy() || d.Stretched() != "" {
		t.Errorf("quiet: limit %s, busy %v, %q", d.Limit(), d.Busy(), d.Stretched())
	}
	SetLoadForTest(4)
	if d.Limit() != time.Second {
		t.Errorf("the limit changed before it was looked at again: %s", d.Limit())
	}
	if d.Passed() || d.Limit() != 4*time.Second || !d.Busy() || d.Stretched() == "" {
		t.Errorf("busy: passed %v, limit %s, busy %v, %q", d.Passed(), d.Limit(), d.Busy(), d.Stretched())
	}
	SetLoadForTest(1)
	if d.Limit() != 4*time.Second || !d.Busy() {
		t.Errorf("a deadline keeps the busiest the machine was while it ran: limit %s, busy %v", d.Limit(), d.Busy())
	}
	SetLoadForTest(100)
	if f := Factor(); f != Max {
		t.Errorf("factor %v at a load of 100 a core, want at most %v", f, Max)
	}
	if Stretch(time.Second) != time.Duration(Max)*time.Second {
		t.Errorf("Stretch(1s) = %s", Stretch(time.Second))
	}
}

// TestLoadIsMeasured: without a fixed load, the machine's own figures
// give one, at least some tasks' worth (this test's own).
func TestLoadIsMeasured(t *testing.T) {
	SetLoadForTest(0)
	if l := Load(); l <= 0 {
		t.Errorf("load %v: the machine's figures were not read", l)
	}
}
