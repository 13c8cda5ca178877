//go:build linux

package main

import (
	"bufio"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/pace"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// proc is a live process started, directly or not, by a bank run.
type proc struct {
	pid     int
	cmdline string
}

// family lists the live processes that carry this cache directory in
// their environment: the bank process, the PostgreSQL it started (the
// postmaster and every backend), and bank serve replicas. They all
// inherit it, whatever their command line says.
func family(cache string) []proc {
	var out []proc
	want := "BANK_CACHE_DIR=" + cache + "\x00"
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		env, err := os.ReadFile(d + "/environ")
		if err != nil || !strings.Contains(string(env), want) {
			continue
		}
		if stat, _ := os.ReadFile(d + "/stat"); zombieStat(stat) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		cmd, _ := os.ReadFile(d + "/cmdline")
		out = append(out, proc{pid, strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))})
	}
	return out
}

func zombieStat(stat []byte) bool {
	i := strings.LastIndexByte(string(stat), ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

func postmasters(ps []proc) []int {
	var pids []int
	for _, p := range ps {
		if strings.Contains(p.cmdline, "/postgres -D ") {
			pids = append(pids, p.pid)
		}
	}
	return pids
}

// servesBelow reports whether a bank serve process runs among pid's
// children (their threads' children lists, /proc/PID/task/TID/children).
func servesBelow(pid int) bool {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	for _, task := range tasks {
		kids, _ := os.ReadFile(task)
		for _, kid := range strings.Fields(string(kids)) {
			cmd, _ := os.ReadFile("/proc/" + kid + "/cmdline")
			if strings.Contains(string(cmd), "\x00serve\x00") {
				return true
			}
		}
	}
	return false
}

func serves(ps []proc) int {
	n := 0
	for _, p := range ps {
		if strings.Contains(p.cmdline, " serve ") {
			n++
		}
	}
	return n
}

// restarted is true once a postmaster other than the first one seen runs,
// with bank serve replicas: the database was crashed and restarted.
func restarted() func(ps []proc, _ string) bool {
	first := 0
	return func(ps []proc, _ string) bool {
		pm := postmasters(ps)
		if len(pm) == 1 && first == 0 {
			first = pm[0]
		}
		return len(pm) == 1 && pm[0] != first && serves(ps) > 0
	}
}

// TestKill9LeavesNothing kills bank with SIGKILL at each phase of a run
// and requires every process it started (PostgreSQL and its backends,
// bank serve replicas, a graded server's children) gone within 5 seconds; the next run then starts
// cleanly on the same cache.
func TestKill9LeavesNothing(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		args  []string
		ready func(ps []proc, stderr string) bool
		fresh bool // a first run: initdb, then the server
	}{
		{"during start-up", []string{"scenario", "naive"}, func(ps []proc, _ string) bool {
			return len(postmasters(ps)) > 0
		}, true},
		// Its bank serve children live for a few tenths of a second: the
		// look for them is at bank's own children (servesBelow), cheap
		// enough to repeat every millisecond, as a look through every
		// process's environment on a busy CI machine missed them.
		{"mid-scenario, with bank serve children", []string{"mistake", "memory-keys"}, nil, false},
		{"after torture restarted the database", []string{"torture", "--seed", "1", "--intents", "2000", "--lock-ttl", "1s"}, restarted(), false},
		// The graded server is a shell that leaves a child of its own
		// (sleep) running: only the grader's watch over the server's
		// process group can end it.
		{"grading a server that starts a child", []string{"grade", "--only", "torture", "--", "sh", "-c", "sleep 600 & exec " + bankBinary(t) + " serve"}, func(ps []proc, _ string) bool {
			return slices.ContainsFunc(ps, func(p proc) bool { return p.cmdline == "sleep 600" })
		}, false},
		{"holding the server open with --keep", []string{"scenario", "naive", "--keep"}, func(_ []proc, stderr string) bool {
			return strings.Contains(stderr, "stays up until you press Ctrl-C")
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cache := pgtest.CacheDir(t)
			if c.fresh {
				cache = pgtest.FreshCacheDir(t)
			}
			cmd := command(t, cache, c.args...)
			stderr, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var seen strings.Builder
			go func() {
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					mu.Lock()
					seen.WriteString(sc.Text() + "\n")
					mu.Unlock()
				}
			}()
			deadline := pace.After(60 * time.Second) // stretched on a busy machine: CI at load 33 took longer for a first run's start
			for c.ready == nil && !servesBelow(cmd.Process.Pid) {
				if deadline.Passed() {
					cmd.Process.Kill()
					t.Fatalf("no bank serve child of bank ever ran: %v", family(cache))
				}
				time.Sleep(time.Millisecond)
			}
			for c.ready != nil {
				ps := family(cache)
				mu.Lock()
				said := seen.String()
				mu.Unlock()
				if c.ready(ps, said) {
					break
				}
				if deadline.Passed() {
					cmd.Process.Kill()
					t.Fatalf("the phase never came: %v", ps)
				}
				time.Sleep(20 * time.Millisecond) // each look reads every process's environment
			}
			// No process of the run carries the database's address (and
			// so no secret) on its command line, where every local user
			// could read it.
			for _, p := range family(cache) {
				if strings.Contains(p.cmdline, "postgres://") || strings.Contains(p.cmdline, "password") {
					t.Errorf("a command line carries the database URL: %s", p.cmdline)
				}
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			var left []proc
			for end := pace.After(5 * time.Second); !end.Passed(); time.Sleep(20 * time.Millisecond) {
				if left = family(cache); len(left) == 0 {
					break
				}
			}
			if len(left) > 0 {
				for _, p := range left {
					syscall.Kill(p.pid, syscall.SIGKILL)
				}
				t.Fatalf("left running 5 s after kill -9: %v", left)
			}
			if out, err := command(t, cache, "scenario", "atomic").CombinedOutput(); err != nil {
				t.Fatalf("next run after kill -9: %v\n%s", err, out)
			}
		})
	}
}

// TestInterruptStopsServer: Ctrl-C (SIGINT), the documented way to end
// --keep, stops the server and exits 0: the scenario itself reproduced.
// The command --keep prints works as printed: the installation's own psql,
// by its path; with an installation that has none (as the npm registry's),
// psql from PATH and a connection string that works too.
func TestInterruptStopsServer(t *testing.T) {
	t.Parallel()
	if pgtest.Server() == nil {
		pgtest.Skip(t, "the tests use a PostgreSQL of their own, not an installation bank runs")
	}
	installed := pgtest.Server().Binaries.Dir
	for _, noPsql := range []bool{false, true} {
		t.Run(map[bool]string{false: "its own psql", true: "no psql"}[noPsql], func(t *testing.T) {
			t.Parallel()
			cache := pgtest.CacheDir(t)
			var env []string
			if noPsql {
				// The installation without its psql: links to the three
				// programs the npm registry's PostgreSQL has.
				cache = pgtest.FreshCacheDir(t)
				dir := filepath.Join(cache, "pg")
				os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
				for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
					if err := os.Symlink(filepath.Join(installed, "bin", name), filepath.Join(dir, "bin", name)); err != nil {
						t.Fatal(err)
					}
				}
				env = append(env, "BANK_PG_BINARIES="+dir)
			}
			cmd := command(t, cache, "scenario", "naive", "--keep")
			cmd.Env = append(cmd.Env, env...)
			stderr, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(stderr)
			var said []string
			for sc.Scan() && !strings.Contains(sc.Text(), "Ctrl-C") {
				said = append(said, sc.Text())
			}
			if len(postmasters(family(cache))) != 1 {
				t.Fatalf("no server while --keep holds it: %v", family(cache))
			}
			var psql, url string
			for i, l := range said {
				switch {
				case strings.HasSuffix(l, " with") && i+1 < len(said) && strings.Contains(said[i+1], "'host="):
					psql = strings.TrimSpace(said[i+1])
				case strings.HasSuffix(l, "any client connects with") && i+1 < len(said):
					url = strings.TrimSpace(said[i+1])
				}
			}
			query := " -w -X -A -t -c 'SELECT sum(balance_kobo) FROM accounts'"
			works := func(line string) {
				t.Helper()
				if out, err := exec.Command("sh", "-c", line+query).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "6500000" { // ₦65,000: naive lost ₦10,000
					t.Errorf("the printed %q does not work: %v %s", line, err, out)
				}
			}
			// The tests' own installation may have no psql either (the npm
			// registry's PostgreSQL 18 of .ci/pg-newest).
			client := filepath.Join(installed, "bin", "psql")
			own := !noPsql
			if _, err := os.Stat(client); err != nil {
				own, client = false, "psql"
			}
			switch {
			case own && !strings.HasPrefix(psql, client+" '"):
				t.Errorf("not the installation's own psql (%s): %q\n%s", installed, psql, strings.Join(said, "\n"))
			case !own && (!strings.HasPrefix(psql, "psql '") || !strings.HasPrefix(url, "postgres://")):
				t.Errorf("no psql of its own, yet %q, and no connection string:\n%s", psql, strings.Join(said, "\n"))
			}
			if psql != "" {
				works(psql) // (with no psql of its own, PATH's: the tests have one)
			}
			if !own && url != "" {
				works(client + " '" + url + "'")
			}
			cmd.Process.Signal(syscall.SIGINT)
			go func() {
				for sc.Scan() {
				}
			}()
			err := cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != exitcode.OK {
				t.Fatalf("exit %d (%v), want 0", code, err)
			}
			if left := family(cache); len(left) > 0 {
				t.Fatalf("left running after Ctrl-C: %v", left)
			}
		})
	}
}

// TestInterruptGradeAndTorture: Ctrl-C (SIGINT) in the middle of bank grade
// and of bank torture ends them, says so, exits 130, and leaves nothing
// of theirs running: no server, no replica, no PostgreSQL. (A grade check
// that was holding a session when it was cut short once kept bank waiting
// on its pool for ever, or panicked.)
func TestInterruptGradeAndTorture(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		args  []string
		after string // interrupt once this line is on stderr
	}{
		{"grade", []string{"grade", "--", bankBinary(t), "serve"}, "grade: a storm of 50 copies"},
		{"grade late", []string{"grade", "--", bankBinary(t), "serve"}, "grade: a server paused"},
		{"torture", []string{"torture", "--seed", "1", "--intents", "20000"}, "killed a replica"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cache := pgtest.CacheDir(t)
			cmd := command(t, cache, c.args...)
			stderr, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(stderr)
			for sc.Scan() && !strings.Contains(sc.Text(), c.after) {
			}
			cmd.Process.Signal(syscall.SIGINT)
			var rest strings.Builder
			done := make(chan struct{})
			go func() {
				defer close(done)
				for sc.Scan() {
					rest.WriteString(sc.Text() + "\n")
				}
			}()
			// Read stderr to its end before Wait, which closes the pipe (a
			// Wait first could lose bank's last line).
			select {
			case <-done:
			case <-time.After(pace.Stretch(20 * time.Second)): // a hang, not a speed goal
				cmd.Process.Kill()
				t.Fatalf("still running 20 s after SIGINT")
			}
			cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != exitcode.Interrupted || !strings.Contains(rest.String(), "bank: interrupted") || strings.Contains(rest.String(), "panic") {
				t.Errorf("exit %d, want 130 and \"bank: interrupted\":\n%s", code, rest.String())
			}
			for deadline := pace.After(5 * time.Second); len(family(cache)) > 0 && !deadline.Passed(); time.Sleep(50 * time.Millisecond) {
			}
			if left := family(cache); len(left) > 0 {
				t.Errorf("left running 5 s after it ended: %v", left)
			}
		})
	}
}

// TestSmallSharedMemory: with a /dev/shm too small for a slot (Docker's
// default is 64 MB; here 48 MB, in a mount namespace of the test's own),
// the run puts its slot on disk and says so under -v, instead of failing
// half-way through the copy and leaving a broken slot behind.
func TestSmallSharedMemory(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root, for a mount namespace with a small /dev/shm (CI runs as root)")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("unshare (util-linux) is missing: %v", err)
	}
	cache := pgtest.CacheDir(t)
	script := `mount -t tmpfs -o size=48m tmpfs /dev/shm && exec "$0" -v scenario crash`
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", "sh", "-c", script, bankBinary(t))
	cmd.Env = append(os.Environ(), "BANK_CACHE_DIR="+cache, "DATABASE_URL=")
	out, err := cmd.CombinedOutput()
	if code := exitOf(err); code != exitcode.OK || !strings.Contains(string(out), "slot on disk: /dev/shm has") || !strings.Contains(string(out), "verdict: invariants held") {
		t.Fatalf("exit %d, want 0 with the slot on disk, said under -v:\n%s", code, out)
	}
}

// pyDaemon is a Python daemon as the books write it: two forks, a session
// of its own, and its environment cleared before it becomes `sleep
// SECONDS`.
const pyDaemon = `import os, sys
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.environ.clear()
        os.execve("/bin/sleep", ["sleep", sys.argv[1]], os.environ)
    os._exit(0)
os.wait()`

// escapes starts, in shell, three sleeps that leave their process group,
// their session and the environment they were given: `setsid env -i
// sleep` in the background, the Python daemon, and a double fork in
// shell (a subshell that exits once it has started a `setsid env -i
// sleep`).
func escapes(a, b, c string) string {
	return "setsid env -i sleep " + a + " & python3 -c '" + pyDaemon + "' " + b + "; (setsid env -i sleep " + c + " &); "
}

// TestLearnersProcessesContained: whatever the learner's command starts,
// a background child, a setsid daemon, one that ignores SIGTERM, a double
// fork that clears its environment, is gone when the exercise or the grade
// check ends, and when bank itself is killed (kill -9): each stays a
// descendant of the keeper that started the command (a child subreaper),
// which kills them all, and on Linux as root is held in a cgroup too.
func TestLearnersProcessesContained(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatalf("python3 is missing (one of the learner's daemons here is a Python one): %v", err)
	}
	cache := pgtest.CacheDir(t)
	// sleeps with numbers of their own, to be found by
	seconds := func() string { return strconv.Itoa(500000 + rand.IntN(400000)) }
	left := func(tags ...string) []string {
		var found []string
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			cmd, _ := os.ReadFile(d + "/cmdline")
			stat, _ := os.ReadFile(d + "/stat")
			for _, tag := range tags {
				if strings.Contains(string(cmd), "sleep\x00"+tag+"\x00") && !zombieStat(stat) {
					found = append(found, tag)
				}
			}
		}
		return found
	}
	// started returns once every tagged sleep runs: the escapes are made.
	started := func(t *testing.T, cmd *exec.Cmd, tags ...string) {
		t.Helper()
		// A hang, not a speed goal: 30 s on a quiet machine, stretched on
		// a busy one (a CI at load 30 took longer to start a grade).
		for deadline := pace.After(30 * time.Second); len(left(tags...)) < len(tags); time.Sleep(20 * time.Millisecond) {
			if deadline.Passed() {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the program started only %v of the sleeps %v", left(tags...), tags)
			}
		}
	}
	settle := func(t *testing.T, tags ...string) {
		t.Helper()
		for deadline := pace.After(5 * time.Second); len(left(tags...)) > 0 && !deadline.Passed(); time.Sleep(50 * time.Millisecond) {
		}
		if l := left(tags...); len(l) > 0 {
			t.Errorf("still running 5 s later: sleep %v", l)
		}
	}
	t.Run("exercise ends", func(t *testing.T) {
		t.Parallel()
		a, b, c, d, e := seconds(), seconds(), seconds(), seconds(), seconds()
		flag := filepath.Join(t.TempDir(), "go")
		script := escapes(a, b, c) + "(trap '' TERM; exec sleep " + d + ") & sleep " + e + " & until [ -e " + flag + " ]; do sleep 0.01; done; echo shipped"
		cmd := command(t, cache, "exercise", "ship", "--", "sh", "-c", script)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		started(t, cmd, a, b, c, d, e)
		os.WriteFile(flag, nil, 0o600)
		cmd.Wait()
		if !strings.Contains(out.String(), "NOT YET") {
			t.Fatalf("the exercise did not run the program:\n%s", out.String())
		}
		settle(t, a, b, c, d, e)
	})
	t.Run("bank killed", func(t *testing.T) {
		t.Parallel()
		a, b, c, d, e := seconds(), seconds(), seconds(), seconds(), seconds()
		script := escapes(a, b, c) + "setsid sleep " + d + " & echo started; exec sleep " + e
		cmd := command(t, cache, "exercise", "ship", "--", "sh", "-c", script)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		started(t, cmd, a, b, c, d, e)
		cmd.Process.Kill()
		cmd.Wait()
		settle(t, a, b, c, d, e)
	})
	t.Run("grade check ends", func(t *testing.T) {
		t.Parallel()
		a, b, c := seconds(), seconds(), seconds()
		flag := filepath.Join(t.TempDir(), "go")
		script := escapes(a, b, c) + "until [ -e " + flag + " ]; do sleep 0.01; done; exec \"$0\" serve"
		cmd := command(t, cache, "grade", "--only", "plain", "--", "sh", "-c", script, bankBinary(t))
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		started(t, cmd, a, b, c)
		os.WriteFile(flag, nil, 0o600)
		if err := cmd.Wait(); exitOf(err) != exitcode.OK {
			t.Fatalf("grade: exit %d\n%s", exitOf(err), out.String())
		}
		settle(t, a, b, c)
	})
	t.Run("bank killed while grading", func(t *testing.T) {
		t.Parallel()
		a, b, c := seconds(), seconds(), seconds()
		// The server waits (for a file that never comes): the check
		// would otherwise end, and its processes with it, before bank is
		// killed.
		never := filepath.Join(t.TempDir(), "never")
		script := escapes(a, b, c) + "until [ -e " + never + " ]; do sleep 0.01; done; exec \"$0\" serve"
		cmd := command(t, cache, "grade", "--only", "plain", "--", "sh", "-c", script, bankBinary(t))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		started(t, cmd, a, b, c)
		cmd.Process.Kill()
		cmd.Wait()
		settle(t, a, b, c)
	})
}
