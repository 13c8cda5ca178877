package hops

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zudojs/bank/cmd/bank/internal/grade"
)

func report(verdicts ...string) grade.Report {
	rep := grade.Report{Verdict: grade.Pass}
	for _, v := range verdicts {
		rep.Results = append(rep.Results, grade.Result{Verdict: v})
		if v == grade.Fail {
			rep.Verdict = grade.Fail
		}
	}
	return rep
}

// TestKeepAndPrint: each whole grade is kept, the latest of its hop; the
// progress says each hop's grade, the command that grades it again, and
// next the first hop not passed; a grade that stopped is not kept.
func TestKeepAndPrint(t *testing.T) {
	state := t.TempDir()
	env := func(k string) string { return map[string]string{"XDG_STATE_HOME": state}[k] }
	Keep(env, io.Discard, "client", []string{"node", "client.mjs"}, report(grade.Pass, grade.Fail))
	Keep(env, io.Discard, "webhook", []string{"./consumer"}, report(grade.Pass))
	Keep(env, io.Discard, "client", []string{"node", "client.mjs"}, report(grade.Pass, grade.Pass))
	stopped := report(grade.Fail)
	stopped.NotRun = []string{"plain"}
	Keep(env, io.Discard, "server", []string{"./server"}, stopped)
	recs, err := Load(Path(env))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	Print(&out, recs)
	for _, want := range []string{
		"PASS, 2 of 2 checks passed", "bank grade client -- node client.mjs",
		"PASS, 1 of 1 checks passed", "bank grade webhook -- ./consumer",
		"server: the public API", "not graded yet; start with:",
		"payout: outbound calls to the rails", "bank grade payout --contract",
		"events: event consumers", "not graded on your code; the lab tells its story: bank scenario consumer",
		"Next:\n  bank grade --contract\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the progress lacks %q:\n%s", want, out.String())
		}
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if len([]rune(l)) > 80 {
			t.Errorf("a line over 80 columns: %q", l)
		}
	}
}

// TestLoadTrustsOnlyTheLearnersFile: a link, or a file others may write,
// is not read; a damaged one says so.
func TestLoadTrustsOnlyTheLearnersFile(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.json")
	os.WriteFile(real, []byte(`{"client":{"of":"client","verdict":"pass"}}`), 0o600)
	link := filepath.Join(dir, "grades.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(link); err == nil || !strings.Contains(err.Error(), "not a file of yours alone") {
		t.Errorf("a link: %v", err)
	}
	shared := filepath.Join(dir, "shared.json")
	os.WriteFile(shared, []byte(`{}`), 0o666)
	os.Chmod(shared, 0o666)
	if _, err := Load(shared); err == nil {
		t.Errorf("a file others may write was read")
	}
	damaged := filepath.Join(dir, "damaged.json")
	os.WriteFile(damaged, []byte(`{`), 0o600)
	if _, err := Load(damaged); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("a damaged file: %v", err)
	}
}
