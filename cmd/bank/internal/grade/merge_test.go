package grade

import "testing"

func results(verdicts ...string) []*Result {
	var rs []*Result
	for i, v := range verdicts {
		rs = append(rs, &Result{Name: "double-tap", Required: true, Verdict: v, Why: v + " in run " + string(rune('1'+i)), Evidence: []string{"run " + string(rune('1'+i))}})
	}
	return rs
}

// named gives each run its mistake.
func named(rs []*Result, mistakes ...string) []*Result {
	for i, m := range mistakes {
		rs[i].Mistake = m
	}
	return rs
}

// TestMergeRepeatedRuns: --repeat's line for a check is a failure if any
// run failed, with how many and the first failure's evidence; a pass if
// any passed and none failed; n/a only if none applied; and a run missing
// (the grade ended) leaves the check out. Failures that name different
// mistakes say how many named each.
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
		{named(results(Fail, Fail, Fail), "no-backoff", "", "no-backoff"), Fail, "failed 3 of 3 runs (no mistake named in 1, no-backoff in 2); the first that failed: fail in run 1", "run 1", 3, 3, true},
		{named(results(Fail, Pass, Fail), "lockstep", "", "lockstep"), Fail, "failed 2 of 3 runs; the first that failed: fail in run 1", "run 1", 3, 2, true},
	} {
		got, ok := Merge(c.runs)
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
	Score(&rep, map[string]int{"crash": 5, "pause": 5})
	if rep.Points != 6 || rep.MaxPoints != 7 || !rep.Passed() {
		t.Fatalf("points %d of %d, passed %v; want 6 of 7, passed (only a recommended check failed)", rep.Points, rep.MaxPoints, rep.Passed())
	}
	rep.Results[0].Verdict = Fail
	Score(&rep, nil)
	if rep.Points != 1 || rep.MaxPoints != 3 || rep.Passed() {
		t.Fatalf("points %d of %d, passed %v; want 1 of 3, failed", rep.Points, rep.MaxPoints, rep.Passed())
	}
}
