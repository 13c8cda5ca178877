package main

import (
	"path/filepath"
	"testing"

	"github.com/zudojs/bank/cmd/bank/internal/payoutgrade"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// bank grade payout is a judge too: its starters, written as a learner
// gets them, must pass what their README says and fail the rest naming
// what they lack; the workers of testdata/payouts, written from the
// contract alone by other hands, must pass, or fail with their mistake.

// TestPayoutStarters: each starter of bank grade payout --starter passes
// plain and fails the rest, naming what it lacks: a reference stored
// before the first send, a claim, a stop after a refusal.
func TestPayoutStarters(t *testing.T) {
	t.Parallel()
	fail := each([]string{"lost-reply", "server-error", "rail-down", "killed"}, "reference-not-stored")
	fail["two-workers"], fail["refused"] = "no-claim", "retried-refusal"
	for _, lang := range payoutgrade.Starters.Languages() {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "my-worker")
			if out, err := command(t, pgtest.CacheDir(t), "grade", "payout", "--starter", lang, dir).CombinedOutput(); err != nil {
				t.Fatalf("--starter %s: %v\n%s", lang, err, out)
			}
			var worker, env []string
			switch lang {
			case "go":
				worker = []string{goBuild(t, dir)}
			case "node":
				modules, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "grade", "node-server", "node_modules"))
				env = []string{"NODE_PATH=" + modules}
				worker = []string{node(t, filepath.Dir(modules), "pg"), filepath.Join(dir, "worker.js")}
			case "python":
				worker = []string{python(t), filepath.Join(dir, "worker.py")}
			}
			programGraded(t, "payout", len(payoutgrade.Checks), env, mistaken{fail: fail}, worker)
		})
	}
}

// payoutCorpus is the worker of testdata/payouts/lang, as a command.
func payoutCorpus(t *testing.T, lang string) []string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "testdata", "payouts", lang))
	if err != nil {
		t.Fatal(err)
	}
	switch lang {
	case "python":
		return []string{python(t), filepath.Join(dir, "worker.py")}
	case "go":
		return []string{goBuild(t, dir)}
	case "node":
		return []string{node(t, dir, "pg"), filepath.Join(dir, "worker.mjs")}
	}
	t.Fatalf("no worker in %s", lang)
	return nil
}

func TestGradePayoutCorpus(t *testing.T) {
	t.Parallel()
	for _, m := range []struct {
		lang, mistake string
		want          mistaken
	}{
		{"python", "", mistaken{}},
		{"python", "new-reference-per-attempt", mistaken{fail: each([]string{"lost-reply", "server-error", "rail-down", "killed"}, "new-reference-per-attempt")}},
		// After a restart it asks as it should: killed holds.
		{"python", "resend-without-asking", mistaken{fail: each([]string{"lost-reply", "server-error", "rail-down"}, "resent-without-asking")}},
		{"python", "done-on-failure", mistaken{fail: each([]string{"rail-down", "refused"}, "done-without-rail")}},
		// The rows are written once both workers are seen reading the
		// outbox: however late the second starts, both meet them.
		{"python", "no-claim", mistaken{fail: map[string]string{"two-workers": "no-claim"}}},
		{"python", "no-backoff", mistaken{fail: map[string]string{"rail-down": "no-backoff"}}},
		{"node", "", mistaken{}},
		{"node", "reference-not-stored", mistaken{fail: map[string]string{"killed": "reference-not-stored"}}},
		// Done at its claim: whether the rail has paid by the time the
		// grader reads the row is a race, but where the rail is down or
		// refuses, or the worker is killed, it never has.
		{"node", "done-before-rail", mistaken{fail: each([]string{"rail-down", "killed", "refused"}, "done-without-rail"),
			maybe: []string{"plain", "lost-reply", "server-error", "two-workers"}}},
		// On a loaded machine its tight loop's tries come as far apart as
		// waits (7 tries in 2 s at load 11 in CI): its main thread, never
		// asleep, gives it away.
		{"node", "no-backoff", mistaken{fail: map[string]string{"rail-down": "no-backoff"}}},
		{"go", "", mistaken{}},
		// The reference's compare-and-set keeps both workers on one
		// reference: paid once, but sent by both.
		{"go", "no-claim", mistaken{fail: map[string]string{"two-workers": "no-claim"}}},
		// Only its start-up resends without asking.
		{"go", "resend-without-asking", mistaken{fail: map[string]string{"killed": "resent-without-asking"}}},
		// Its tight loop runs on the runtime's threads, not the main one:
		// it makes hundreds of tries in the time, even loaded.
		{"go", "no-backoff", mistaken{fail: map[string]string{"rail-down": "no-backoff"}}},
		{"go", "new-reference-per-attempt", mistaken{fail: each([]string{"lost-reply", "server-error", "rail-down", "killed"}, "new-reference-per-attempt")}},
	} {
		t.Run(m.lang+"/"+m.mistake, func(t *testing.T) {
			t.Parallel()
			programGraded(t, "payout", len(payoutgrade.Checks), []string{"WORKER_MISTAKE=" + m.mistake}, m.want, payoutCorpus(t, m.lang))
		})
	}
}
