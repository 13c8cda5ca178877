package main

import (
	"strings"
	"testing"

	"github.com/zudojs/bank/bank/pgserver/pgtest"
)

// TestTortureValid: the CI tier, 2,000 intents, injects every fault kind,
// including a takeover and a fencing rejection, and ends valid.
func TestTortureValid(t *testing.T) {
	out, err := command(t, pgtest.CacheDir(t), "torture", "--seed", "1", "--intents", "2000", "--lock-ttl", "1s").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "verdict: valid") {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, fault := range []string{"replica-kill", "replica-pause", "database-crash", "client-crash", "changed-body", "concurrent-duplicate", "lost-response", "fencing rejections (seen by the servers)"} {
		if strings.Contains(string(out), "  "+fault+strings.Repeat(" ", 43-len(fault))+"0\n") {
			t.Errorf("%s never happened:\n%s", fault, out)
		}
	}
}

// TestTortureCatchesEachMistake: the checker is only worth something if it
// fails when the servers are wrong. Each --break mode must end invalid and
// name keys that moved money twice.
func TestTortureCatchesEachMistake(t *testing.T) {
	for _, mode := range []string{"no-keys", "memory-keys", "no-fencing"} {
		t.Run(mode, func(t *testing.T) {
			out, err := command(t, pgtest.CacheDir(t), "torture", "--seed", "1", "--intents", "400", "--lock-ttl", "1s", "--break", mode).CombinedOutput()
			if exitOf(err) != exitNotAsTaught || !strings.Contains(string(out), "verdict: invalid") || !strings.Contains(string(out), "moved money") {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}
