package procs

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pyDaemon is a Python daemon as the books write it: it forks twice, the
// middle process taking a session of its own and exiting, so that the
// daemon is an orphan in a session of its own; the daemon then clears its
// environment and becomes `sleep SECONDS` with none.
const pyDaemon = `import os, sys
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.environ.clear()
        os.execve("/bin/sleep", ["sleep", sys.argv[1]], os.environ)
    os._exit(0)
os.wait()`

// escapes is a shell script that starts three processes that leave the
// process group, the session and the environment they were given: a
// `setsid env -i sleep` in the background; the Python daemon; and the same
// double fork in shell, a subshell that exits as soon as it has started a
// `setsid env -i sleep`. Each sleeps a number of seconds of its own, by
// which the test finds it (its tag).
func escapes(tags []string) string {
	return "setsid env -i sleep " + tags[0] + " &\n" +
		"python3 -c '" + pyDaemon + "' " + tags[1] + "\n" +
		"(setsid env -i sleep " + tags[2] + " &)\n"
}

// newTags gives n numbers of seconds no other test uses.
func newTags(n int) []string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = strconv.Itoa(500000 + rand.IntN(400000))
	}
	return tags
}

// alive lists the tags of the sleeps still running (a zombie has ended).
func alive(tags []string) []string {
	var found []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		cmd, err := os.ReadFile(d + "/cmdline")
		if err != nil {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		for _, tag := range tags {
			if strings.Contains(string(cmd), "sleep\x00"+tag+"\x00") && !zombie(pid) {
				found = append(found, tag+" (pid "+strconv.Itoa(pid)+")")
			}
		}
	}
	return found
}

// waitAlive returns once every tagged sleep runs: the escapes have been
// made.
func waitAlive(t *testing.T, tags []string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); len(alive(tags)) < len(tags); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) { // a hang, not a speed goal
			t.Fatalf("only %v of the sleeps %v ever ran", alive(tags), tags)
		}
	}
}

// cleanUp kills, at the end of the test, whatever a failing test left.
func cleanUp(t *testing.T, tags []string) {
	t.Cleanup(func() {
		for _, a := range alive(tags) {
			pid, _ := strconv.Atoi(strings.TrimSuffix(a[strings.Index(a, "pid ")+4:], ")"))
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

func needPython(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatalf("python3 is missing (the daemon of these tests is a Python one): %v", err)
	}
}

// TestGroupContainsEscapes: whatever a Group's program starts, however it
// leaves the group, the session and the environment it was given (setsid,
// a double fork, env -i, a cleared environment), is gone when the
// program's end has been dealt with: when Exited is closed and Kill has
// returned (Run), when Kill or Stop returns, when its context ends.
func TestGroupContainsEscapes(t *testing.T) {
	needPython(t)
	for _, c := range []struct {
		name string
		end  func(t *testing.T, tags []string) // starts the group, waits for the escapes, ends it
	}{
		{"the program ends", func(t *testing.T, tags []string) {
			flag := filepath.Join(t.TempDir(), "go")
			spec := &Spec{Path: "/bin/sh", Args: []string{"-c", escapes(tags) + "while [ ! -e " + flag + " ]; do sleep 0.01; done"}, Group: true, WaitDelay: time.Second}
			g, err := spec.Start(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			waitAlive(t, tags[:3])
			os.WriteFile(flag, nil, 0o600)
			<-g.Exited()
			g.Kill() // as Run does
			if err := g.Err(); err != nil {
				t.Errorf("the program's exit status: %v, want success", err)
			}
		}},
		{"Kill", func(t *testing.T, tags []string) {
			spec := &Spec{Path: "/bin/sh", Args: []string{"-c", escapes(tags) + "exec sleep " + tags[3]}, Group: true, WaitDelay: time.Second}
			g, err := spec.Start(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			waitAlive(t, tags)
			g.Kill()
		}},
		{"Stop", func(t *testing.T, tags []string) {
			spec := &Spec{Path: "/bin/sh", Args: []string{"-c", escapes(tags) + "exec sleep " + tags[3]}, Group: true, WaitDelay: time.Second}
			g, err := spec.Start(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			waitAlive(t, tags)
			if err := g.Stop(); err == nil || !strings.Contains(err.Error(), "terminated") {
				t.Errorf("Stop: %v, want the signal that ended the program", err)
			}
		}},
		{"its context ends", func(t *testing.T, tags []string) {
			ctx, cancel := context.WithCancel(context.Background())
			spec := &Spec{Path: "/bin/sh", Args: []string{"-c", escapes(tags) + "exec sleep " + tags[3]}, Group: true, WaitDelay: time.Second}
			g, err := spec.Start(ctx)
			if err != nil {
				t.Fatal(err)
			}
			waitAlive(t, tags)
			cancel()
			<-g.Exited()
		}},
		// The keeper slower than the program's WaitDelay (a busy machine:
		// it is stopped here for twice that): the keeper is not killed
		// before it has killed the escapes.
		{"its context ends and the keeper is slow", func(t *testing.T, tags []string) {
			ctx, cancel := context.WithCancel(context.Background())
			spec := &Spec{Path: "/bin/sh", Args: []string{"-c", escapes(tags) + "exec sleep " + tags[3]}, Group: true, WaitDelay: time.Second}
			g, err := spec.Start(ctx)
			if err != nil {
				t.Fatal(err)
			}
			waitAlive(t, tags)
			keeper := g.cmd.Process.Pid
			syscall.Kill(keeper, syscall.SIGSTOP)
			cancel()
			time.Sleep(2 * spec.WaitDelay)
			syscall.Kill(keeper, syscall.SIGCONT)
			<-g.Exited()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tags := newTags(4)
			cleanUp(t, tags)
			c.end(t, tags)
			if left := alive(tags); len(left) > 0 {
				t.Errorf("still running: sleep %v", left)
			}
		})
	}
}

// TestGroupContainsEscapesWhenTheLabIsKilled: the same escapes, and the
// program itself, are gone soon after the lab that started them is
// killed with SIGKILL: nothing of the lab is left to act but what the
// kernel ties to it.
func TestGroupContainsEscapesWhenTheLabIsKilled(t *testing.T) {
	needPython(t)
	tags := newTags(4)
	cleanUp(t, tags)
	run := "BANK_PROCS_TEST_RUN=" + randomHex(8)
	lab := exec.Command(os.Args[0], "-test.run=^$")
	lab.Env = append(os.Environ(), labRole+"=1", labScript+"="+escapes(tags)+"exec sleep "+tags[3], run)
	out, _ := lab.StdoutPipe()
	if err := lab.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "started\n" {
		lab.Process.Kill()
		lab.Wait()
		t.Fatalf("the lab did not start its group: %q", line)
	}
	waitAlive(t, tags)
	lab.Process.Kill()
	lab.Wait()
	// Whatever still carries the run's variable is the lab's too: its
	// keepers and watchdog, the program's shell.
	var left []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if left = append(alive(tags), carrying(run)...); len(left) == 0 {
			return
		}
	}
	t.Fatalf("still running 5 s after the lab was killed: %v", left)
}

// carrying lists the live processes with the variable v in their
// environment.
func carrying(v string) []string {
	var found []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		env, err := os.ReadFile(d + "/environ")
		pid, _ := strconv.Atoi(filepath.Base(d))
		if err != nil || !strings.Contains("\x00"+string(env), "\x00"+v+"\x00") || zombie(pid) {
			continue
		}
		cmd, _ := os.ReadFile(d + "/cmdline")
		found = append(found, strings.ReplaceAll(string(cmd), "\x00", " ")+"(pid "+strconv.Itoa(pid)+")")
	}
	return found
}

// TestKeeperThatCannotStartIsAnError: a Group's program is started by its
// keeper or not at all: with no keeper, Start says so, and nothing of the
// program runs.
func TestKeeperThatCannotStartIsAnError(t *testing.T) {
	saved := keeperPath
	keeperPath = "/nonexistent/bank"
	t.Cleanup(func() { keeperPath = saved })
	flag := t.TempDir() + "/ran"
	spec := &Spec{Path: "/bin/sh", Args: []string{"-c", "touch " + flag}, Group: true}
	g, err := spec.Start(context.Background())
	if err == nil {
		g.Kill()
		t.Fatal("a Group's program started with no keeper")
	}
	if !strings.Contains(err.Error(), "keeper") || !strings.Contains(err.Error(), "/nonexistent/bank") {
		t.Fatalf("the error does not say the keeper could not start: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(flag); err == nil {
		t.Fatal("the refused program ran")
	}
}

// TestGroupExitStatus: a Group's program ends, through its keeper, as it
// ended itself: its exit status, or the signal that killed it, whether it
// left nothing behind (the keeper finds it has no child left and ends at
// once) or a process the keeper kills first, and after Kill, whose
// program the keeper finds killed but not yet reaped.
func TestGroupExitStatus(t *testing.T) {
	tag := newTags(1)[0]
	cleanUp(t, []string{tag})
	for _, c := range []struct {
		name, script string
		want         string // in Err
	}{
		{"exit 3, nothing left", "exit 3", "exit status 3"},
		{"exit 3, a daemon left", "(setsid env -i sleep " + tag + " &); exit 3", "exit status 3"},
		{"its own SIGTERM, nothing left", "kill -TERM $$", "signal: terminated"},
		{"its own SIGTERM, a daemon left", "(setsid env -i sleep " + tag + " &); kill -TERM $$", "signal: terminated"},
		{"success", "true", ""},
	} {
		spec := &Spec{Path: "/bin/sh", Args: []string{"-c", c.script}, Group: true, WaitDelay: time.Second}
		err := spec.Run(context.Background())
		if got := fmt.Sprint(err); (c.want == "" && err != nil) || (c.want != "" && got != c.want) {
			t.Errorf("%s: Err %v, want %q", c.name, err, c.want)
		}
		if left := alive([]string{tag}); len(left) > 0 {
			t.Errorf("%s: still running: sleep %v", c.name, left)
		}
	}
	for range 20 { // the keeper may find the killed program reaped or not yet
		g, err := (&Spec{Path: "/bin/sleep", Args: []string{"600"}, Group: true}).Start(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		g.Kill()
		if err := g.Err(); fmt.Sprint(err) != "signal: killed" {
			t.Fatalf("after Kill: Err %v, want signal: killed", err)
		}
	}
}
