package main

import (
	"strings"
	"testing"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// TestGradeVerboseDrawsFailures: with -v, a failed check's diagram is
// drawn after its evidence, as bank scenario --diagram draws a run, in 80
// columns when the output is not a terminal; a check that passed is not
// drawn. bank serve --mistake no-keys fails lost-response: the retry after
// the lost reply ran the transfer again.
func TestGradeVerboseDrawsFailures(t *testing.T) {
	t.Parallel()
	graders <- struct{}{}
	defer func() { <-graders }()
	cmd := command(t, pgtest.CacheDir(t), "-v", "grade", "--only", "plain,lost-response", "--", bankBinary(t), "serve", "--mistake", "no-keys")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	out := string(b)
	if code := exitOf(err); code != exitcode.No {
		t.Fatalf("exit %d, want 1:\n%s\n%s", code, out, stderr.String())
	}
	passed, failed, ok := strings.Cut(out, "FAIL     lost-response")
	if !ok || strings.Contains(passed, "│") {
		t.Fatalf("lost-response did not fail, or the check that passed was drawn:\n%s", out)
	}
	for _, want := range []string{"app", "proxy", "server A", "POST ₦10,000 1→2, key grade-lost-0000001", "[LOST] 201 transfer 1, never reaches the app", "201 transfer 2", "═ Ada ₦30,000"} {
		if !strings.Contains(failed, want) {
			t.Errorf("the failed check's diagram lacks %q:\n%s", want, failed)
		}
	}
	if !strings.Contains(failed, "✕") || strings.Index(failed, "│") < strings.Index(failed, "FAIL: each request moved money once") {
		t.Errorf("the lost reply is not drawn, or the diagram does not follow the evidence:\n%s", failed)
	}
	for _, line := range strings.Split(failed, "\n") {
		if strings.Contains(line, "│") && len([]rune(line)) > 80 {
			t.Errorf("a line of the diagram is %d columns wide, not at most 80: %q", len([]rune(line)), line)
		}
	}
}

// TestGradeHTMLStdout: --html - writes the page alone on standard output,
// and --html refuses what --html refuses for scenarios, before grading.
func TestGradeHTMLStdout(t *testing.T) {
	t.Parallel()
	graders <- struct{}{}
	defer func() { <-graders }()
	cmd := command(t, pgtest.CacheDir(t), "grade", "--html", "-", "--only", "plain", "--", bankBinary(t), "serve")
	b, err := cmd.Output()
	page := string(b)
	if err != nil || !strings.HasPrefix(page, "<!DOCTYPE html>") || !strings.HasSuffix(page, "</html>\n") ||
		!strings.Contains(page, `data-check="plain" data-verdict="pass"`) || !strings.Contains(page, `class="diagram"`) || strings.Contains(page, "verdict: PASS (every required check held)") {
		t.Errorf("--html -: %v, want the page alone:\n%.600s", err, page)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"grade", "--html", t.TempDir(), "--", "true"}, "is a directory: name a new file or a regular one"},
		{[]string{"grade", "--html", "-", "--json", "--", "true"}, "--html - and --json both write to standard output"},
	} {
		r := cli(t, nil, c.args...)
		if r.code != exitcode.Usage || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line with %q", c.args, r.code, r.stderr, c.want)
		}
	}
}
