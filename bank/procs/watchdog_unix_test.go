//go:build unix

package procs

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWatchdogForgetsKilledGroups: the watchdog signals, when the lab
// dies, only the groups still the lab's: a group the lab killed itself is
// forgotten, since its number may by then be someone else's group.
func TestWatchdogForgetsKilledGroups(t *testing.T) {
	// The script's kill is replaced by one that says what it would do.
	cmd := exec.Command("/bin/sh", "-c", `kill() { echo "kill $*"; }; `+watchdogScript)
	cmd.Stdin = strings.NewReader("100 KILL BANK_GROUP_aa\n200 KILL BANK_GROUP_bb\nforget 100\n300 KILL BANK_GROUP_cc\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{"kill -KILL -200\n", "kill -KILL -300\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("the watchdog does not signal a live group: want %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "-100\n") {
		t.Errorf("the watchdog signalled a group it was told to forget:\n%s", got)
	}
}

// TestWatchdogKillsMarked: when the lab dies, the watchdog kills every
// process that carries a mark it was told of, even one outside every
// group it knows (a setsid daemon), in one pass over /proc.
func TestWatchdogKillsMarked(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc here: marks are a Linux matter")
	}
	mark := markPrefix + randomHex(8)
	daemon := exec.Command("sleep", "300")
	daemon.Env = append(os.Environ(), mark+"=1")
	daemon.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { daemon.Wait(); close(exited) }()
	defer daemon.Process.Kill()
	w := exec.Command("/bin/sh", "-c", watchdogScript)
	w.Stdin = strings.NewReader("999999 KILL " + mark + "\n")
	if out, err := w.CombinedOutput(); err != nil {
		t.Fatalf("the watchdog: %v %s", err, out)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the marked daemon outlived the watchdog's pass")
	}
}

// TestWatchdogThatCannotStartIsAnError: where the watchdog is what ties a
// child to the lab (a Group's on every Unix, every child on macOS), a
// watchdog that cannot start refuses the child, and nothing of it runs.
func TestWatchdogThatCannotStartIsAnError(t *testing.T) {
	watchdog.Lock()
	saved := watchdog.in
	watchdog.in, watchdog.shell = nil, "/nonexistent/sh"
	watchdog.Unlock()
	t.Cleanup(func() {
		watchdog.Lock()
		watchdog.in, watchdog.shell = saved, ""
		watchdog.Unlock()
	})
	flag := t.TempDir() + "/ran"
	spec := &Spec{Path: "/bin/sh", Args: []string{"-c", "touch " + flag}, Group: true}
	c, err := spec.Start(t.Context())
	if err == nil {
		c.Kill()
		t.Fatal("a Group's child started with no watchdog to end it")
	}
	if !strings.Contains(err.Error(), "watchdog") || !strings.Contains(err.Error(), "/nonexistent/sh") {
		t.Fatalf("the error does not say the watchdog could not start: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(flag); err == nil {
		t.Fatal("the refused child ran its command")
	}
}
