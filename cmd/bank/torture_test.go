package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/zudojs/bank/bank/pgserver/pgtest"
	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/torture"
)

// tortureJSON runs bank torture with --json and returns its report.
func tortureJSON(t *testing.T, args ...string) (torture.Report, int, string) {
	t.Helper()
	out, err := command(t, pgtest.CacheDir(t), append([]string{"torture", "--json"}, args...)...).Output()
	var rep torture.Report
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		t.Fatalf("torture %v printed no report (%v, exit %d): %s", args, jerr, exitOf(err), out)
	}
	return rep, exitOf(err), string(out)
}

// TestTortureValid: the CI tier, 2,000 intents, injects every fault kind,
// including a takeover and a fencing rejection (the pause is choreographed
// through PostgreSQL, so every run has them), and ends valid.
func TestTortureValid(t *testing.T) {
	t.Parallel()
	rep, code, out := tortureJSON(t, "--seed", "1", "--intents", "2000", "--lock-ttl", "1s")
	if code != exitcode.OK || rep.Verdict != "valid" {
		t.Fatalf("exit %d, verdict %q: %s", code, rep.Verdict, out)
	}
	for _, fault := range append(torture.AllFaults, "takeovers (seen by the servers)", "fencing rejections (seen by the servers)") {
		if rep.Faults[fault] == 0 {
			t.Errorf("%s never happened: %v", fault, rep.Faults)
		}
	}
}

// TestTortureCatchesEachMistake: the checker is only worth something if it
// fails when the servers are wrong. Each --break mode must end invalid and
// name keys that moved money twice, on the first seed: the fenced pause
// makes even no-fencing show every time.
func TestTortureCatchesEachMistake(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"no-keys", "memory-keys", "no-fencing"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			rep, code, out := tortureJSON(t, "--seed", "1", "--intents", "400", "--lock-ttl", "1s", "--break", mode)
			if code != exitcode.No || rep.Verdict != "invalid" || len(rep.Offending) == 0 {
				t.Fatalf("exit %d, verdict %q, offending %v: %s", code, rep.Verdict, rep.Offending, out)
			}
		})
	}
}

// TestTortureReportSaysWhatWasLeftOut: a fault kind the platform cannot
// inject (the pause, on Windows) is named in the report with the reason;
// where nothing was left out (Linux, macOS) the report is as it was.
func TestTortureReportSaysWhatWasLeftOut(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	rep := torture.Report{Seed: 1, Intents: 10, Faults: map[string]int64{"duplicate": 3}, Checks: map[string]int{"every intent resolved": 10}, Verdict: "valid"}
	rep.Print(&out)
	if strings.Contains(out.String(), "left out") {
		t.Errorf("nothing was left out, yet:\n%s", out.String())
	}
	out.Reset()
	rep.LeftOut = map[string]string{"replica-pause": "pausing a process needs SIGSTOP, which Windows does not have"}
	rep.Print(&out)
	want := `
fault kinds left out, which this platform cannot inject:
  replica-pause: pausing a process needs SIGSTOP, which Windows does not have
  (so neither the takeover nor the fencing rejection a pause brings is required)

checks passed:
`
	if !strings.Contains(out.String(), want) {
		t.Errorf("the report does not say what was left out:\n%s", out.String())
	}
}
