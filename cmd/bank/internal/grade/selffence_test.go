package grade

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSlowFirstRequestFencedByItself: a server whose first request took
// longer than its lock, and so rolled its own work back and answered 409
// (as a server that fences itself does on a slow machine: it happened to
// a correct Redis store in 1 of 20 grades four at once), is not failed
// for it: the grader witnesses the request's duration, resends as a
// client would, and judges the answer that settles it.
func TestSlowFirstRequestFencedByItself(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "selffence")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/selffence").CombinedOutput(); err != nil {
		t.Fatalf("building the server: %v\n%s", err, out)
	}
	r := gradeCommand(t, []string{"plain"}, bin).Results[0]
	evidence := strings.Join(r.Evidence, "\n")
	if r.Verdict != Pass || !strings.Contains(evidence, "fencing its own late work") || !strings.Contains(evidence, "→ 409") {
		t.Fatalf("plain: %s (%s), want a pass after the server's own 409:\n%s", r.Verdict, r.Why, evidence)
	}
}
