package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/cmd/bank/internal/hookgrade"
	"github.com/zudojs/bank/cmd/bank/internal/pace"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// bank grade webhook is a judge too, proven on consumers its author did not
// write: testdata/webhooks holds consumers written from bank grade webhook
// --contract alone, by other hands. The correct ones must pass every
// check; each mistake (CONSUMER_MISTAKE) must fail the checks it breaks,
// naming it, and pass the rest (but its maybe, which its design may pass
// or fail by timing). make test grades each once; BANK_CORPUS_RUNS=20
// grades each 20 times.

// hookCorpus is the consumer of testdata/webhooks/lang, as a command.
func hookCorpus(t *testing.T, lang string) []string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "testdata", "webhooks", lang))
	if err != nil {
		t.Fatal(err)
	}
	switch lang {
	case "python":
		return []string{python(t), filepath.Join(dir, "consumer.py")}
	case "go":
		return []string{goBuild(t, dir)}
	case "node":
		return []string{node(t, dir, "pg"), filepath.Join(dir, "consumer.mjs")}
	}
	t.Fatalf("no consumer in %s", lang)
	return nil
}

// hookGraded grades a consumer BANK_CORPUS_RUNS times (1 unless set), with
// CONSUMER_MISTAKE=mistake, and fails the test on each run whose card
// differs from want.
func hookGraded(t *testing.T, mistake string, want mistaken, consumer []string, env ...string) {
	t.Helper()
	programGraded(t, "webhook", len(hookgrade.Checks), append(env, "CONSUMER_MISTAKE="+mistake), want, consumer)
}

// programGraded grades a program with bank grade OF (webhook, payout),
// whose checks number checks, BANK_CORPUS_RUNS times (1 unless set), env
// in its environment, and fails the test on each run whose card differs
// from want (but for want.maybe).
func programGraded(t *testing.T, of string, checks int, env []string, want mistaken, program []string) {
	t.Helper()
	runs, _ := strconv.Atoi(os.Getenv("BANK_CORPUS_RUNS"))
	runs = max(1, runs)
	bad := 0
	var took []time.Duration
	for i := range runs {
		start := time.Now()
		graders <- struct{}{}
		cmd := command(t, pgtest.CacheDir(t), append([]string{"grade", of, "--json", "--jobs", "4", "--"}, program...)...)
		cmd.Env = append(cmd.Env, env...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		<-graders
		took = append(took, time.Since(start))
		var rep grade.Report
		if jerr := json.Unmarshal(out, &rep); jerr != nil {
			t.Fatalf("grade %s %v printed no report (%v, exit %d): %s\n%s", of, program, jerr, exitOf(err), out, stderr.String())
		}
		matchesShape(t, "bank.grade/v1", out)
		if len(rep.Results) != checks {
			t.Fatalf("%d results for %d checks:\n%s", len(rep.Results), checks, out)
		}
		rep.Results = slices.DeleteFunc(rep.Results, func(r grade.Result) bool { return slices.Contains(want.maybe, r.Name) })
		d := deviations(rep, want)
		if of == "webhook" && len(want.fail) == 0 {
			d = append(d, killExplained(rep)...)
		}
		if len(d) > 0 {
			bad++
			t.Errorf("run %d of %d: %s\n%s", i+1, runs, strings.Join(d, "; "), out)
		}
	}
	slices.Sort(took)
	t.Logf("%s CORPUS %s: %d of %d runs as expected; median grade %.1fs (load per core at the end %.1f)",
		strings.ToUpper(of), t.Name(), runs-bad, runs, took[len(took)/2].Seconds(), pace.Load())
}

// killExplained is what is wrong with the killed check's evidence: the
// delivery that a kill cut short (the last of its event before the kill's
// note, unanswered) must be named by that note: its failure read with its
// cause.
func killExplained(rep grade.Report) []string {
	var d []string
	for _, r := range rep.Results {
		if r.Name != "killed" {
			continue
		}
		last := map[string]string{} // an event's last delivery so far
		for _, e := range r.Evidence {
			if _, after, ok := strings.Cut(e, " delivered "); ok {
				id, _, _ := strings.Cut(after, " ")
				last[id] = e
				continue
			}
			_, after, ok := strings.Cut(e, "killed (SIGKILL) at the first write of its transaction ")
			if !ok {
				continue
			}
			_, id, _ := strings.Cut(after, " for ")
			id, _, _ = strings.Cut(id, ":")
			cut := last[id]
			if !strings.HasSuffix(cut, ": no answer") && !strings.Contains(cut, ": no answer: ") {
				continue
			}
			at, _, _ := strings.Cut(cut, " delivered ")
			if !strings.HasSuffix(e, ": the delivery sent at "+at+" was left unanswered") {
				d = append(d, fmt.Sprintf("killed: %q does not name the delivery it cut short, %q", e, cut))
			}
		}
	}
	return d
}

func TestGradeWebhookCorpus(t *testing.T) {
	t.Parallel()
	for _, lang := range []string{"python", "node", "go"} {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			hookGraded(t, "", mistaken{}, hookCorpus(t, lang))
		})
	}
	dup := []string{"redelivered", "lost-ack", "twin", "at-once"}
	recorded := []string{"plain", "redelivered", "lost-ack", "twin", "at-once", "killed", "slow"}
	for _, m := range []struct {
		lang, mistake string
		want          mistaken
	}{
		// Its statement and lock timeouts (2 and 3 s) end a transaction
		// the grader holds: a copy after that is alone, so at-once may
		// pass, and slow does.
		{"python", "no-event-dedupe", mistaken{fail: each(dup[:3], "no-event-dedupe"), maybe: []string{"at-once"}}},
		{"python", "check-then-insert", mistaken{fail: map[string]string{"at-once": "dedupe-race"}, maybe: []string{"slow"}}},
		{"python", "event-outside-transaction", mistaken{fail: each(recorded, "event-outside-transaction")}},
		{"python", "signature-not-checked", mistaken{fail: map[string]string{"forged": "signature-not-checked"}}},
		{"python", "timestamp-not-checked", mistaken{fail: map[string]string{"stale": "stale-accepted"}}},
		{"node", "no-payment-dedupe", mistaken{fail: map[string]string{"twin": "no-payment-dedupe"}}},
		{"node", "ack-before-commit", mistaken{fail: each([]string{"at-once", "killed", "slow"}, "ack-before-commit")}},
		{"node", "high-water-mark", mistaken{fail: map[string]string{"out-of-order": "order-assumed"}}},
		// A copy that finds the first's transaction ended by the
		// provider's hang-up credits alone, and is not a duplicate.
		{"node", "duplicate-not-acked", mistaken{fail: each(dup, "duplicate-refused"), maybe: []string{"killed", "slow"}}},
		{"go", "no-event-dedupe", mistaken{fail: each(append(dup, "slow"), "no-event-dedupe")}},
		{"go", "event-outside-transaction", mistaken{fail: each(recorded, "event-outside-transaction")}},
		// Six seconds inside its transaction and no unique key: each
		// delivery is answered 503 while its credit runs on, and the
		// provider's redelivery credits again beside it.
		{"go", "slow-no-lock", mistaken{fail: each([]string{"plain", "redelivered", "lost-ack", "at-once", "out-of-order", "killed", "slow"}, "dedupe-race"), maybe: []string{"twin"}}},
	} {
		t.Run(m.lang+"/"+m.mistake, func(t *testing.T) {
			t.Parallel()
			hookGraded(t, m.mistake, m.want, hookCorpus(t, m.lang))
		})
	}
}

// TestWebhookStarters: each starter of bank grade webhook --starter,
// written as a learner gets it, passes what its README says
// (out-of-order) and fails the rest, naming what it lacks: a record of
// the events, and the signature's check.
func TestWebhookStarters(t *testing.T) {
	t.Parallel()
	fail := each([]string{"plain", "redelivered", "lost-ack", "twin", "at-once", "killed", "slow"}, "no-event-dedupe")
	fail["forged"], fail["stale"] = "signature-not-checked", "stale-accepted"
	for _, lang := range hookgrade.Starters.Languages() {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "my-consumer")
			if out, err := command(t, pgtest.CacheDir(t), "grade", "webhook", "--starter", lang, dir).CombinedOutput(); err != nil {
				t.Fatalf("--starter %s: %v\n%s", lang, err, out)
			}
			var consumer, env []string
			switch lang {
			case "go":
				consumer = []string{goBuild(t, dir)}
			case "node":
				// The corpus server's pg, in place of npm install.
				modules := filepath.Join("..", "..", "testdata", "grade", "node-server", "node_modules")
				abs, _ := filepath.Abs(modules)
				env = []string{"NODE_PATH=" + abs}
				consumer = []string{node(t, filepath.Dir(abs), "pg"), filepath.Join(dir, "consumer.js")}
			case "python":
				consumer = []string{python(t), filepath.Join(dir, "consumer.py")}
			}
			hookGraded(t, "", mistaken{fail: fail}, consumer, env...)
		})
	}
}

// TestGradeWebhookCannotStart: a consumer that exits before it listens is
// the environment's failure (exit 3), said in one sentence with what it
// wrote last, never the lab's own.
func TestGradeWebhookCannotStart(t *testing.T) {
	t.Parallel()
	cmd := command(t, pgtest.CacheDir(t), "grade", "webhook", "--only", "plain", "--", "sh", "-c", "echo no database driver >&2; exit 3")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if code := exitOf(err); code != 3 || !strings.Contains(stderr.String(), "the consumer exited (exit status 3) before it listened on its PORT") || !strings.Contains(stderr.String(), "no database driver") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 3, why, and its last output", code, stderr.String())
	}
}
