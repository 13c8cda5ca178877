package grade

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"
)

func results(verdicts ...string) []*Result {
	var rs []*Result
	for i, v := range verdicts {
		rs = append(rs, &Result{Name: "double-tap", Required: true, Verdict: v, Why: v + " in run " + string(rune('1'+i)), Evidence: []string{"run " + string(rune('1'+i))}})
	}
	return rs
}

// TestMergeRepeatedRuns: --repeat's line for a check is a failure if any
// run failed, with how many and the first failure's evidence; a pass if
// any passed and none failed; n/a only if none applied; and a run missing
// (the grade ended) leaves the check out.
func TestMergeRepeatedRuns(t *testing.T) {
	for _, c := range []struct {
		runs           []*Result
		verdict, why   string
		evidence       string
		runsN, failedN int
		ok             bool
	}{
		{results(Pass, Fail, Pass, Fail), Fail, "failed 2 of 4 runs; the first that failed: fail in run 2", "run 2", 4, 2, true},
		{results(Pass, Pass, Pass), Pass, "passed in all 3 runs: pass in run 1", "run 1", 3, 0, true},
		{results(NA, Pass), Pass, "passed 1 of 2 runs (not applicable in the others): pass in run 2", "run 2", 2, 0, true},
		{results(NA, NA), NA, "not applicable in all 2 runs: n/a in run 1", "run 1", 2, 0, true},
		{results(Fail), Fail, "fail in run 1", "run 1", 1, 1, true},
		{append(results(Pass), nil), "", "", "", 0, 0, false},
	} {
		got, ok := merge(c.runs)
		if ok != c.ok {
			t.Errorf("%v: ok %v, want %v", c.why, ok, c.ok)
			continue
		}
		if !ok {
			continue
		}
		if got.Verdict != c.verdict || got.Why != c.why || got.Evidence[0] != c.evidence || got.Runs != c.runsN || got.FailedRuns != c.failedN {
			t.Errorf("merged to %s %q (evidence %v, runs %d, failed %d); want %s %q (%s, %d, %d)",
				got.Verdict, got.Why, got.Evidence, got.Runs, got.FailedRuns, c.verdict, c.why, c.evidence, c.runsN, c.failedN)
		}
	}
}

// TestScorePoints: a passed check earns its worth (1 unless named), a
// failed one nothing, one that did not apply counts on neither side; the
// report passes unless a required check failed.
func TestScorePoints(t *testing.T) {
	rep := Report{Results: []Result{
		{Name: "plain", Required: true, Verdict: Pass},
		{Name: "crash", Required: true, Verdict: Pass},
		{Name: "pause", Required: true, Verdict: NA},
		{Name: "replayed", Verdict: Fail},
	}}
	score(&rep, map[string]int{"crash": 5, "pause": 5})
	if rep.Points != 6 || rep.MaxPoints != 7 || !rep.Passed {
		t.Fatalf("points %d of %d, passed %v; want 6 of 7, passed (only a recommended check failed)", rep.Points, rep.MaxPoints, rep.Passed)
	}
	rep.Results[0].Verdict = Fail
	score(&rep, nil)
	if rep.Points != 1 || rep.MaxPoints != 3 || rep.Passed {
		t.Fatalf("points %d of %d, passed %v; want 1 of 3, failed", rep.Points, rep.MaxPoints, rep.Passed)
	}
}

// TestJUnitCountsAndMessages: the JUnit file parses, has one testcase per
// check, counts failures and skips as the card does, and a failure's
// message is the check's line with its mistake as the type.
func TestJUnitCountsAndMessages(t *testing.T) {
	rep := Report{Results: []Result{
		{Name: "plain", Title: "a plain transfer", Required: true, Verdict: Pass, Evidence: []string{"201"}},
		{Name: "lost-response", Title: "a lost reply", Required: true, Verdict: Fail, Why: "the retry ran the transfer again & <twice>", Mistake: "no-keys", LooksLike: "no key", See: "bank scenario retry-safe", Evidence: []string{"transfers 2"}},
		{Name: "crash-on-store", Title: "a kill while storing", Required: true, Verdict: NA, Why: "no table of its own"},
	}}
	score(&rep, nil)
	var b strings.Builder
	if err := rep.WriteJUnit(&b, []string{"node", "server.js"}, 2*time.Second, 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var s junitSuite
	if err := xml.Unmarshal([]byte(b.String()), &s); err != nil {
		t.Fatalf("the JUnit file does not parse: %v\n%s", err, b.String())
	}
	if s.Tests != 3 || len(s.Cases) != 3 || s.Failures != 1 || s.Skipped != 1 || s.Time != "1.500" {
		t.Fatalf("tests %d (cases %d), failures %d, skipped %d, time %s; want 3, 3, 1, 1, 1.500", s.Tests, len(s.Cases), s.Failures, s.Skipped, s.Time)
	}
	f := s.Cases[1].Failure
	if f == nil || f.Message != "the retry ran the transfer again & <twice>" || f.Type != "no-keys" || !strings.Contains(f.Text, "see it done right: bank scenario retry-safe") || !strings.Contains(f.Text, "transfers 2") {
		t.Fatalf("failure: %+v", f)
	}
	if s.Cases[2].Skipped == nil || s.Cases[2].Skipped.Message != "no table of its own" || s.Cases[0].Failure != nil || s.Cases[0].Skipped != nil {
		t.Fatalf("cases: %+v", s.Cases)
	}
}
