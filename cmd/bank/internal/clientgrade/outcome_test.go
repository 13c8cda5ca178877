package clientgrade

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// exitWith is the error a process that exited with code leaves.
func exitWith(t *testing.T, code int) error {
	t.Helper()
	if code == 0 {
		return nil
	}
	err := exec.Command("sh", "-c", "exit "+string(rune('0'+code))).Run()
	if err == nil {
		t.Fatal("sh exited 0")
	}
	return err
}

// TestReadOutcome: the contract's three reports are read from the exit
// status and the last line; one whose status and line disagree, or with
// no line, is a client that failed.
func TestReadOutcome(t *testing.T) {
	cases := []struct {
		stdout  string
		code    int
		said    string
		problem string // a part of it, "" for none
	}{
		{"attempt 1: 201\n{\"outcome\":\"made\",\"transferId\":7}\n", 0, "made", ""},
		{`{"outcome":"refused","status":422,"error":"insufficient_funds"}`, 3, "refused", ""},
		{`{"outcome":"unknown"}` + "\n\n", 4, "unknown", ""},
		{`{"outcome":"made","transferId":7}`, 4, "made", "exit status 4 is not made's 0"},
		{`{"outcome":"made"}`, 0, "made", "without the transfer's transferId"},
		{`{"outcome":"failed"}`, 3, "failed", "does not have"},
		{"Traceback (most recent call last):", 1, "", "it failed (exit 1)"},
		{"done", 0, "", `its last line on standard output is "done"`},
	}
	for _, c := range cases {
		o := readOutcome(c.stdout, exitWith(t, c.code))
		if o.Said != c.said || (c.problem == "") != (o.Problem == "") || !strings.Contains(o.Problem, c.problem) {
			t.Errorf("%q, exit %d: said %q, problem %q; want %q, %q", c.stdout, c.code, o.Said, o.Problem, c.said, c.problem)
		}
	}
	if o := readOutcome(`{"outcome":"made","transferId":"12"}`, nil); o.Transfer != 12 {
		t.Errorf("a transferId as a string: %d, want 12", o.Transfer)
	}
}

// TestFlat: waits that do not grow are flat; the lesson's, and AWS's full
// jitter, are not.
func TestFlat(t *testing.T) {
	for _, c := range []struct {
		waits []time.Duration
		flat  bool
	}{
		{ms(100, 103, 101, 104, 102), true}, // a fixed delay
		{ms(1, 2, 1, 3, 1), true},           // none
		{ms(75, 122, 231, 418, 830), false}, // the lesson's: 50·2^n + up to 50
		{ms(31, 12, 160, 55, 702), false},   // full jitter: a random part of 50·2^n
	} {
		if got := flat(c.waits); got != c.flat {
			t.Errorf("flat(%s) = %t, want %t", msList(c.waits), got, c.flat)
		}
	}
}

// TestGrew: a backoff grows through its jitter; a random wait that does
// not grow does not; on a busy machine one long wait is not enough.
func TestGrew(t *testing.T) {
	for _, c := range []struct {
		waits       []time.Duration
		quiet, busy bool
	}{
		{ms(75, 122, 231, 418, 830, 1620, 3230, 6410), true, true}, // the lesson's: 50·2^n + up to 50
		{ms(31, 12, 160, 55, 702, 90, 2400, 4100), true, true},     // full jitter: a random part of 50·2^n
		{ms(189, 73, 58, 157, 207, 120, 240, 66), false, false},    // a random 50 to 250 ms
		{ms(100, 101, 103, 100, 102, 100, 104, 900), true, false},  // a fixed delay, its last wait held up by the machine
		{ms(60, 110, 190, 400, 830, 1500, 2000, 2000), true, true}, // capped at 2 s
		{ms(40, 90, 150, 300), true, true},                         // gave up after four waits
		{ms(40, 90, 100, 300), true, false},                        // the last alone grew
	} {
		if got := grew(c.waits, false); got != c.quiet {
			t.Errorf("grew(%s) on a quiet machine = %t, want %t", msList(c.waits), got, c.quiet)
		}
		if got := grew(c.waits, true); got != c.busy {
			t.Errorf("grew(%s) on a busy machine = %t, want %t", msList(c.waits), got, c.busy)
		}
	}
}

func ms(v ...int) []time.Duration {
	var d []time.Duration
	for _, x := range v {
		d = append(d, time.Duration(x)*time.Millisecond)
	}
	return d
}
