//go:build unix

package procs

import (
	"os/exec"
	"strings"
	"testing"
)

// TestWatchdogForgetsKilledGroups: the watchdog signals, when the lab
// dies, only the groups still the lab's: a group the lab killed itself is
// forgotten, since its number may by then be someone else's group.
func TestWatchdogForgetsKilledGroups(t *testing.T) {
	// The script's kill is replaced by one that says what it would do.
	cmd := exec.Command("/bin/sh", "-c", `kill() { echo "kill $*"; }; `+watchdogScript)
	cmd.Stdin = strings.NewReader("group 100 KILL\ngroup 200 INT\nforget 100\ngroup 300 KILL\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{"kill -INT -200\n", "kill -KILL -300\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("the watchdog does not signal a live group: want %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "-100\n") {
		t.Errorf("the watchdog signalled a group it was told to forget:\n%s", got)
	}
}
