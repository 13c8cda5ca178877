//go:build unix && !linux

package procs

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestWatchdogThatCannotStartIsAnError: where the watchdog is what ties a
// child to the lab (every child, a Group's too, on macOS), a watchdog
// that cannot start refuses the child, and nothing of it runs.
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
