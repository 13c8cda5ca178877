//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// TestTortureHistoryNeverDestructive: --history follows the rules of
// --html and --junit (package outfile). Run as root (as the lab's tests
// are here), a link to a file root may write is refused and its target
// left as it was; a FIFO is refused at once, not opened (it hung a run at
// 228 of 2,000 intents, Ctrl-C ignored, once a reader came and went);
// /dev/full, a device, is refused (a run wrote to it, ignored every
// error, and ended "valid"). Each is one line and exit 2, before anything
// starts, and leaves no temporary file.
func TestTortureHistoryNeverDestructive(t *testing.T) {
	t.Parallel()
	tr := fileTraps(t, "history.jsonl", "/dev/full")
	for path, what := range tr.refused {
		r := cli(t, nil, "torture", "--intents", "10", "--history", path)
		// No "-" is offered: standard output has the report.
		if r.code != exitcode.Usage || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, what) || r.stdout != "" || strings.Contains(r.stderr, "standard output") {
			t.Errorf("--history %s: exit %d, %q; want exit 2 and one line naming %s", path, r.code, r.stderr, what)
		}
	}
	tr.unchanged(t, ".bank-history-*")
}

// TestTortureHistoryWritten: the history is every attempt and every
// fault as JSON lines, put in place whole, over a regular file that was
// there, with no temporary file left beside it.
func TestTortureHistoryWritten(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "history.jsonl")
	if err := os.WriteFile(path, []byte("an older history\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := command(t, pgtest.CacheDir(t), "torture", "--seed", "2", "--intents", "100", "--lock-ttl", "1s", "--history", path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kinds := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line struct{ Kind, Fault string }
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("a line that is not JSON: %q", sc.Text())
		}
		kinds[line.Kind+line.Fault]++
	}
	for _, k := range []string{"send", "lookup", "replica-kill", "restart", "replica-pause", "session-kill"} {
		if kinds[k] == 0 {
			t.Errorf("no %s in the history: %v", k, kinds)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".bank-history-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestTortureInterruptedLeavesNoHistory: Ctrl-C ends a run (exit 130),
// whatever the history is doing, and the history it was writing is
// removed: nothing half-written is left.
func TestTortureInterruptedLeavesNoHistory(t *testing.T) {
	t.Parallel()
	// Ctrl-C, and SIGKILL, which no clean-up can follow: neither leaves a
	// history, whole or in part, or a temporary file beside its place.
	for _, sig := range []os.Signal{os.Interrupt, os.Kill} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "history.jsonl")
			cmd := exec.Command(bankBinary(t), "torture", "--seed", "1", "--intents", "100000", "--history", path)
			cmd.Env = append(os.Environ(), "BANK_CACHE_DIR="+pgtest.CacheDir(t), "DATABASE_URL="+pgtest.AdminURL())
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			ended := make(chan error, 1)
			go func() { ended <- cmd.Wait() }()
			// Interrupted once the run has begun and its history has lines
			// (the first 64 KiB of them, which the buffer writes at once).
			for !historyBegun(cmd.Process.Pid, dir) {
				select {
				case err := <-ended:
					t.Fatalf("the run ended before it was interrupted: %v", err)
				case <-time.After(20 * time.Millisecond):
				}
			}
			cmd.Process.Signal(sig)
			code := exitOf(<-ended)
			if sig == os.Interrupt && code != exitcode.Interrupted {
				t.Errorf("exit %d after Ctrl-C, want %d", code, exitcode.Interrupted)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("left behind: %v", entries)
			}
		})
	}
}

// historyBegun reports whether process pid has written lines of a
// history into dir: into a hidden temporary file there, or (on Linux)
// into a file with no name yet, seen among its open files.
func historyBegun(pid int, dir string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, ".bank-history-*"))
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		for _, fd := range fds {
			fdPath := fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())
			if target, err := os.Readlink(fdPath); err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
				files = append(files, fdPath)
			}
		}
	}
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && st.Size() > 0 {
			return true
		}
	}
	return false
}
