package clientgrade

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zudojs/bank/scenarios/lab/procs"
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

// TestWaitSpans: a wait lies between its measured length less the client's
// busy time and its length from the front's first move to answer; the
// machine held it up by the front's writing and the client's waits for a
// core; a wait across a restart, or without a reading, has no least.
func TestWaitSpans(t *testing.T) {
	at := time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)
	tick := func(ms int) time.Time { return at.Add(time.Duration(ms) * time.Millisecond) }
	cpu := func(ran, waited int) procs.CPUTime {
		return procs.CPUTime{Ran: time.Duration(ran) * time.Millisecond, Waited: time.Duration(waited) * time.Millisecond}
	}
	posts := []attempt{
		{Run: 1, Sent: tick(0), Answered: tick(10), Written: tick(12), BusyOut: cpu(4, 1), OutRead: true, InRead: true},
		{Run: 1, Sent: tick(112), Answered: tick(120), Written: tick(125), BusyIn: cpu(21, 14), BusyOut: cpu(22, 14), OutRead: true, InRead: true},
		{Run: 2, Sent: tick(300), Answered: tick(301), BusyIn: cpu(2, 0), InRead: true},
		{Run: 2, Sent: tick(400), InRead: true},
	}
	want := []span{{lo: 70 * time.Millisecond, hi: 102 * time.Millisecond, held: 15 * time.Millisecond, witnessed: true}, {hi: 180 * time.Millisecond}, {hi: 99 * time.Millisecond}}
	if got := waitSpans(posts); !slices.Equal(got, want) {
		t.Errorf("waitSpans = %v, want %v", got, want)
	}
}

// TestWitnessedSpread: waits proven apart, proven together, and (wide
// spans) neither; one outlier each way is left out; an unwitnessed span
// proves nothing.
func TestWitnessedSpread(t *testing.T) {
	for _, c := range []struct {
		name            string
		spans           []span
		apart, together int
		ok              bool
	}{
		{"jitter", spansOf(400, 405, 410, 412, 430, 433, 446, 450, 445, 449), 33, 39, true},
		{"lockstep", spansOf(398, 402, 399, 403, 397, 401, 398, 404, 400, 402), -3, 5, true},
		{"a busy machine", spansOf(150, 420, 200, 460, 180, 430, 120, 410, 260, 440), -220, 290, true},
		{"one held up", spansOf(398, 402, 399, 403, 397, 401, 520, 530, 400, 402, 396, 400), -1, 6, true},
		{"too few", spansOf(1, 2, 3, 4, 5, 6), 0, 0, false},
		{"unwitnessed", append(spansOf(1, 2, 3, 4, 5, 6), span{hi: 9}), 0, 0, false},
	} {
		apart, together, ok := witnessedSpread(c.spans)
		if ok != c.ok || ok && (apart != time.Duration(c.apart)*time.Millisecond || together != time.Duration(c.together)*time.Millisecond) {
			t.Errorf("%s: apart %s, together %s, %t; want %dms, %dms, %t", c.name, apart, together, ok, c.apart, c.together, c.ok)
		}
	}
}

// TestGrewWitnessed: one late wait proven three times the early ones is a
// backoff's growth, however busy the machine; wide spans prove nothing.
func TestGrewWitnessed(t *testing.T) {
	for _, c := range []struct {
		name  string
		spans []span
		want  bool
	}{
		{"full jitter", spansOf(20, 41, 70, 81, 5, 14, 390, 403, 330, 339, 770, 780, 2520, 2536, 120, 139), true},
		{"a fixed delay held up once", spansOf(90, 101, 95, 103, 92, 100, 91, 102, 93, 100, 94, 101, 90, 104, 100, 900), false},
		{"wide spans", spansOf(10, 80, 20, 90, 10, 70, 30, 200, 40, 210, 20, 230, 100, 300, 60, 240), false},
		{"too few", spansOf(10, 11, 50, 51), false},
		{"one unwitnessed", append(spansOf(20, 41, 70, 81, 5, 14, 390, 403, 330, 339, 770, 780, 2520, 2536), span{hi: 139}), false},
	} {
		if got := grewWitnessed(c.spans); got != c.want {
			t.Errorf("%s: grewWitnessed = %t, want %t", c.name, got, c.want)
		}
	}
}

// spansOf are witnessed spans, lo and hi in milliseconds, in pairs.
func spansOf(lohi ...int) []span {
	var s []span
	for i := 0; i < len(lohi); i += 2 {
		s = append(s, span{lo: time.Duration(lohi[i]) * time.Millisecond, hi: time.Duration(lohi[i+1]) * time.Millisecond, witnessed: true})
	}
	return s
}

// TestStepVerdict: the last five failures decide lockstep, three of them
// at least showing jitter or showing the clients in step; a failure shows
// it by what the clients chose, where witnessed, or by their waits as
// measured; two where what they chose is proven apart are jitter, unless
// most show them in step (then the check cannot tell). The lesson's own
// jitter (a random 0 to 50 ms on waits of up to 1,600 ms) is jitter,
// however long the waits.
func TestStepVerdict(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	seen := func(spread, apart, together, held int) round {
		return round{spread: ms(spread), apart: ms(apart), together: ms(together), held: ms(held), witnessed: true}
	}
	measured := func(spread int) round { return round{spread: ms(spread)} }
	for _, c := range []struct {
		name string
		last []round
		busy float64
		want stepKind
		n    int
	}{
		{"the lesson's jitter, witnessed", []round{seen(35, 20, 60, 3), seen(44, 30, 51, 2), seen(31, 24, 38, 4), seen(33, 27, 40, 2), seen(16, 9, 21, 3)}, 1, jitter, 4},
		{"the lesson's jitter, spans wide", []round{seen(40, -5, 70, 4), seen(19, -20, 50, 3), seen(28, -10, 60, 2), seen(33, -8, 66, 5), seen(24, -15, 58, 1)}, 1.8, jitter, 4},
		{"the lesson's jitter, shown either way", []round{seen(40, 25, 70, 30), seen(19, -20, 50, 3), seen(28, -10, 60, 2), seen(33, 19, 66, 25), seen(24, -15, 58, 11)}, 1.8, jitter, 3},
		{"the lesson's jitter, measured", []round{measured(40), measured(19), measured(28), measured(33), measured(24)}, 1, jitter, 4},
		{"the lesson's jitter on long waits", []round{measured(38), measured(30), measured(41), measured(33), measured(35)}, 1, jitter, 5},
		{"the lesson's jitter, measured on a busy machine", []round{measured(38), measured(30), measured(41), measured(33), measured(35)}, 2, cannotTell, 0},
		{"the lesson's jitter, held up on a busy machine", []round{seen(48, -20, 90, 30), seen(52, -25, 95, 35), seen(61, -10, 99, 22), seen(40, -30, 88, 31), seen(70, -5, 120, 40)}, 6, cannotTell, 0},
		{"full jitter on a busy machine", []round{seen(100, 20, 190, 60), seen(210, 100, 330, 70), seen(400, 210, 620, 50), seen(90, -40, 180, 80), seen(700, 380, 950, 40)}, 6, jitter, 4},
		{"no jitter, witnessed", []round{seen(25, -9, 140, 2), seen(19, -5, 17, 1), seen(5, -4, 9, 1), seen(7, -6, 12, 2), seen(30, 2, 41, 3)}, 1, inStep, 3},
		{"no jitter, measured", []round{measured(22), measured(17), measured(6), measured(13), measured(9)}, 1, inStep, 4},
		{"no jitter, one round unwitnessed", []round{seen(18, -9, 140, 2), seen(9, -5, 17, 2), seen(5, -4, 9, 1), measured(7), seen(6, -3, 10, 0)}, 1, inStep, 5},
		{"no jitter on a busy machine", []round{seen(60, -40, 90, 45), seen(41, -33, 77, 30), seen(38, -30, 70, 25), seen(45, -25, 80, 33), seen(52, -41, 95, 38)}, 6, cannotTell, 0},
		{"two proven apart, two in step", []round{seen(20, 14, 25, 1), seen(8, -2, 11, 1), seen(24, 19, 30, 1), seen(30, 21, 35, 9), seen(9, -1, 16, 2)}, 1, jitter, 2},
		{"full jitter's short waits blurred", []round{seen(90, -60, 200, 70), seen(110, -30, 240, 95), seen(120, 12, 300, 150), seen(320, 90, 500, 120), seen(600, 240, 900, 200)}, 6, jitter, 2},
		{"two each way, measured", []round{measured(20), measured(8), measured(46), measured(50), measured(9)}, 1, cannotTell, 0},
		{"in step by most, two proven apart", []round{seen(8, -2, 11, 1), seen(24, 19, 30, 1), seen(30, 21, 35, 9), seen(9, -1, 16, 2), seen(7, -3, 12, 1)}, 1, cannotTell, 0},
	} {
		if got, n := stepVerdict(c.last, c.busy); got != c.want || n != c.n {
			t.Errorf("%s: stepVerdict = %d, %d rounds; want %d, %d", c.name, got, n, c.want, c.n)
		}
	}
}
