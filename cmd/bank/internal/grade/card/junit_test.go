package card

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/grade"
)

// TestJUnitCountsAndMessages: the JUnit file parses, has one testcase per
// check, counts failures and skips as the card does, and a failure's
// message is the check's line with its mistake as the type.
func TestJUnitCountsAndMessages(t *testing.T) {
	rep := grade.Report{Points: 1, MaxPoints: 2, Results: []grade.Result{
		{Name: "plain", Title: "a plain transfer", Required: true, Verdict: grade.Pass, Evidence: []string{"201"}},
		{Name: "lost-response", Title: "a lost reply", Required: true, Verdict: grade.Fail, Why: "the retry ran the transfer again & <twice>", Mistake: "no-keys", LooksLike: "no key", See: "bank scenario retry-safe", Evidence: []string{"transfers 2"}},
		{Name: "crash-on-store", Title: "a kill while storing", Required: true, Verdict: grade.NA, Why: "no table of its own"},
	}}
	var b strings.Builder
	if err := JUnit(&b, rep, Server([]string{"node", "server.js"}, 2*time.Second), 1500*time.Millisecond); err != nil {
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
