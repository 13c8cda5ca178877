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
