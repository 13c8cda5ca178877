//go:build linux

package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/pace"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// A learner's server may be hostile, by mistake or on purpose: its
// answers huge, endless, dripping or broken, or 201 to everything with no
// database behind it. testdata/grade/hostile/server.py is such a server
// (HOSTILE=mode). The grader must stay bounded in memory and time, end
// with a card that says what it saw, never an internal error, and stop
// within 2 s of a Ctrl-C.

// peakRSS runs cmd and returns, with its exit code and output, its peak
// resident memory in MiB (VmHWM, read from /proc while it runs).
func peakRSS(t *testing.T, args []string, env ...string) (code int, out string, mib int) {
	t.Helper()
	cmd := command(t, pgtest.CacheDir(t), args...)
	cmd.Env = append(cmd.Env, env...)
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	status := filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "status")
	for {
		if kb := vmHWM(status); kb/1024 > mib {
			mib = kb / 1024
		}
		select {
		case err := <-done:
			return exitOf(err), stdout.String(), mib
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func vmHWM(status string) int {
	f, err := os.Open(status)
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kb
		}
	}
	return 0
}

func hostileServer(t *testing.T) []string {
	return []string{python(t), filepath.Join(corpusDir(t, "hostile"), "server.py")}
}

// TestGradeHostileServersStayBounded: for every hostile mode, two runs of
// the checks that talk to the server most, six at a time: a card (exit
// 1, every check failed or not applicable, none an internal error), and
// bank's own memory under 100 MiB however much the server sends.
func TestGradeHostileServersStayBounded(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"huge-body", "endless", "drip", "malformed", "always-201", "big-header"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			graders <- struct{}{}
			defer func() { <-graders }()
			only := "plain,lost-response,replayed,storm,lookup,torture"
			if mode == "drip" {
				// A byte a second sends nothing to hold, and each of its
				// requests takes the client's whole 30 s: the checks that
				// resend and settle for a minute took a busy CI past 10.
				only = "plain,replayed,storm,lookup"
			}
			args := append([]string{"grade", "--json", "--jobs", "6", "--repeat", "2", "--only", only, "--"}, hostileServer(t)...)
			code, out, mib := peakRSS(t, args, "HOSTILE="+mode)
			if code != exitcode.No || !strings.Contains(out, `"verdict": "fail"`) {
				t.Errorf("exit %d, want 1 and a failed card:\n%s", code, out)
			}
			if mib >= 100 {
				t.Errorf("bank's memory peaked at %d MiB grading a server whose answers are %s, not under 100", mib, mode)
			}
			t.Logf("%s: exit %d, peak %d MiB", mode, code, mib)
		})
	}
}

// TestGradeHostileAlways201SaysWhatItDid: a server that answers 201 to
// everything and keeps no database gets a card that says so.
func TestGradeHostileAlways201SaysWhatItDid(t *testing.T) {
	t.Parallel()
	args := append([]string{"grade", "--only", "plain,no-key,crash-on-store", "--"}, hostileServer(t)...)
	cmd := command(t, pgtest.CacheDir(t), args...)
	cmd.Env = append(cmd.Env, "HOSTILE=always-201")
	out, err := cmd.Output()
	if code := exitOf(err); code != exitcode.No || !strings.Contains(string(out), "it keeps no database, and no transfer it reports was made") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// TestGradeNeverRunsTheServersCodeAsTheLab: a server that sets traps in
// its database for a grader that reads it with more rights than the
// server's own (a view over a function of its own in place of
// transfers, a schema of its own before pg_catalog on the database's
// search_path) never gets its code run as a superuser: each trap, so
// run, would touch a file.
func TestGradeNeverRunsTheServersCodeAsTheLab(t *testing.T) {
	t.Parallel()
	// A folder PostgreSQL's account can write to (t.TempDir's parents
	// are root's alone), so that a trap run as a superuser leaves its mark.
	dir, err := os.MkdirTemp("", "bank-trap-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	mark := filepath.Join(dir, "ran-as-superuser")
	args := append([]string{"grade", "--only", "plain,crash-on-store,pause,storm", "--"}, hostileServer(t)...)
	cmd := command(t, pgtest.CacheDir(t), args...)
	cmd.Env = append(cmd.Env, "HOSTILE=traps", "HOSTILE_MARK="+mark)
	out, err := cmd.CombinedOutput()
	if code := exitOf(err); code != exitcode.No {
		t.Errorf("exit %d, want 1 (a card):\n%s", code, out)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Errorf("the server's function ran as a superuser: %s was written\n%s", mark, out)
	}
}

// TestGradeInterruptedWithin2s: Ctrl-C (SIGINT) in the middle of a grade
// of a server that drips its answers ends bank within 2 s, exit 130, and
// the server's processes with it.
func TestGradeInterruptedWithin2s(t *testing.T) {
	t.Parallel()
	for _, after := range []time.Duration{500 * time.Millisecond, 3 * time.Second, 6 * time.Second} {
		t.Run(after.String(), func(t *testing.T) {
			t.Parallel()
			args := append([]string{"grade", "--jobs", "6"}, append([]string{"--"}, hostileServer(t)...)...)
			cmd := command(t, pgtest.CacheDir(t), args...)
			mark := "BANK_TEST_HOSTILE_RUN=" + after.String()
			cmd.Env = append(cmd.Env, "HOSTILE=drip", mark)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			time.Sleep(after)
			sent := time.Now()
			cmd.Process.Signal(syscall.SIGINT)
			select {
			case err := <-done:
				// 2 s on a quiet machine, stretched on a busy one (package pace).
				// Killed by the SIGINT itself, it came before bank could
				// catch it (a start on a busy machine): a shell says 130 too.
				if took, code := time.Since(sent), exitOf(err); code != exitcode.Interrupted && !killedBy(err, syscall.SIGINT) || took > pace.Stretch(2*time.Second) {
					t.Errorf("exit %d %s after Ctrl-C, want 130 within %s", code, took.Round(time.Millisecond), pace.Stretch(2*time.Second))
				}
			case <-time.After(pace.Stretch(30 * time.Second)):
				cmd.Process.Kill()
				t.Fatalf("still running 30 s after Ctrl-C")
			}
			waitNoProcess(t, mark, cmd.Process.Pid)
		})
	}
}

// killedBy reports whether a command ended killed by sig.
func killedBy(err error, sig syscall.Signal) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// waitNoProcess waits, a few seconds at most, until no process started
// under bank pid carries mark in its environment.
func waitNoProcess(t *testing.T, mark string, pid int) {
	t.Helper()
	var left []string
	for deadline := pace.After(5 * time.Second); !deadline.Passed(); time.Sleep(100 * time.Millisecond) {
		left = nil
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			if _, err := strconv.Atoi(e.Name()); err != nil {
				continue
			}
			env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			if err == nil && strings.Contains(string(env), mark+"\x00") && strings.Contains(string(env), "\x00PORT=") {
				left = append(left, e.Name())
			}
		}
		if len(left) == 0 {
			return
		}
	}
	t.Errorf("processes of the graded server still there after bank (pid %d) ended: %v", pid, left)
}
