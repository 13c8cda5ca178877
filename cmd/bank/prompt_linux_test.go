package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/pace"
	"github.com/zudojs/bank/scenarios"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// interactive is bank run as a learner runs it: a process of its own
// whose terminal (standard input, output and error, and its controlling
// terminal) is a pseudo-terminal, so that Ctrl-C typed there reaches it
// as a terminal sends it, SIGINT to the foreground process group.
type interactive struct {
	t      *testing.T
	cmd    *exec.Cmd
	master *os.File
	mu     sync.Mutex
	shown  strings.Builder
	exited chan struct{}
}

// startInteractive starts bank with args on a terminal of its own, its
// cache directory cache (as family finds its processes by); with shared,
// on the tests' PostgreSQL rather than a private one.
func startInteractive(t *testing.T, cache string, shared bool, args ...string) *interactive {
	t.Helper()
	master, tty := newTerminal(t, 80)
	cmd := exec.Command(bankBinary(t), args...)
	url := ""
	if shared {
		url = pgtest.AdminURL()
	}
	cmd.Env = append(os.Environ(), "BANK_CACHE_DIR="+cache, "DATABASE_URL="+url, "TERM=dumb")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close() // bank's copies are its own: master's reads end when they close
	r := &interactive{t: t, cmd: cmd, master: master, exited: make(chan struct{})}
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			r.mu.Lock()
			r.shown.Write(buf[:n])
			r.mu.Unlock()
			if err != nil {
				return // EIO once every copy of the terminal is closed
			}
		}
	}()
	go func() {
		cmd.Wait()
		<-read
		close(r.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-r.exited:
		default:
			cmd.Process.Kill()
			<-r.exited
		}
	})
	return r
}

func (r *interactive) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.ReplaceAll(r.shown.String(), "\r\n", "\n")
}

// waitFor waits until the terminal has shown prompt n times, and reports
// false when bank ended first. It waits as long as a run takes: a run
// that hangs before a prompt is go test's timeout to catch.
func (r *interactive) waitFor(prompt string, n int) bool {
	for strings.Count(r.output(), prompt) < n {
		select {
		case <-r.exited:
			return strings.Count(r.output(), prompt) >= n
		case <-time.After(20 * time.Millisecond):
		}
	}
	return true
}

func (r *interactive) typeIn(s string) {
	if _, err := r.master.Write([]byte(s)); err != nil {
		r.t.Fatal(err)
	}
}

// interrupt types Ctrl-C and requires bank to end within 2 s, as on a
// quiet machine (stretched by how busy this one is: pace), with exit 130
// and "bank: interrupted", and then nothing of its own left running.
func (r *interactive) interrupt(cache, what string) {
	r.t.Helper()
	limit := pace.After(2 * time.Second)
	r.typeIn("\x03")
	for done := false; !done; {
		select {
		case <-r.exited:
			done = true
		case <-time.After(20 * time.Millisecond):
			if limit.Passed() {
				r.t.Fatalf("%s: still running %v after Ctrl-C%s:\n%s", what, limit.Limit(), limit.Stretched(), r.output())
			}
		}
	}
	if code := r.cmd.ProcessState.ExitCode(); code != exitcode.Interrupted || !strings.Contains(r.output(), "bank: interrupted") {
		r.t.Errorf("%s: exit %d, want 130 and bank: interrupted:\n%s", what, code, r.output())
	}
	gone := pace.After(2 * time.Second)
	for len(family(cache)) > 0 && !gone.Passed() {
		time.Sleep(20 * time.Millisecond)
	}
	if left := family(cache); len(left) > 0 {
		r.t.Errorf("%s: left running %v after bank ended%s: %v", what, gone.Limit(), gone.Stretched(), left)
	}
}

// atEachPrompt runs bank with args once per prompt it shows, answering
// the prompts before (with answer) and typing Ctrl-C at that one, until a
// run ends before its prompt: every prompt is interrupted once. It
// returns how many prompts there were.
func atEachPrompt(t *testing.T, shared bool, prompt, answer string, args ...string) int {
	t.Helper()
	for n := 1; ; n++ {
		cache := pgtest.CacheDir(t)
		r := startInteractive(t, cache, shared, args...)
		for i := 1; i < n; i++ {
			if !r.waitFor(prompt, i) {
				t.Fatalf("%v ended before prompt %d of a run that showed more:\n%s", args, i, r.output())
			}
			r.typeIn(answer)
		}
		if !r.waitFor(prompt, n) {
			<-r.exited
			if code := r.cmd.ProcessState.ExitCode(); code != exitcode.OK && code != exitcode.No {
				t.Fatalf("%v answered at every prompt: exit %d:\n%s", args, code, r.output())
			}
			return n - 1
		}
		r.interrupt(cache, fmt.Sprintf("%v at prompt %d", args, n))
	}
}

// TestCtrlCAtEveryPrompt: Ctrl-C typed on a real terminal at a prompt of
// every interactive mode, and in the wait for a learner's program, ends
// bank within 2 s (stretched by the machine's load) with exit 130 and
// "bank: interrupted", leaving nothing of its own running: --step at every
// step of every story (scenario crash on a private PostgreSQL, which must
// be stopped too), --predict at each question, the quiz at each question,
// an exercise while the program runs. (Before, bank quiz and --predict read on, taking the next
// line typed as an answer, and mistake no-fencing --step hung.)
func TestCtrlCAtEveryPrompt(t *testing.T) {
	t.Parallel()
	const step, question = "[Enter] next step", "your answer (1-"
	t.Run("scenario crash --step, private PostgreSQL", func(t *testing.T) {
		if n := atEachPrompt(t, false, step, "\r", "scenario", "crash", "--step"); n < 2 {
			t.Errorf("%d prompts", n)
		}
	})
	t.Run("mistake no-fencing --step", func(t *testing.T) {
		if n := atEachPrompt(t, true, step, "\r", "mistake", "no-fencing", "--step"); n < 2 {
			t.Errorf("%d prompts", n)
		}
	})
	t.Run("every step of every other story", func(t *testing.T) {
		var stories [][]string
		for _, n := range scenarios.Names() {
			if n != "crash" {
				stories = append(stories, []string{"scenario", n, "--step"})
			}
		}
		for _, n := range scenarios.MistakeNames() {
			if n != "no-fencing" {
				stories = append(stories, []string{"mistake", n, "--step"})
			}
		}
		for _, args := range stories {
			t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
				t.Parallel()
				n := atEachPrompt(t, true, step, "\r", args...)
				if n < 1 {
					t.Errorf("%v: no prompt", args)
				}
				t.Logf("%v: Ctrl-C at each of its %d prompts", args, n)
			})
		}
	})
	t.Run("scenario crash --predict", func(t *testing.T) {
		if n := atEachPrompt(t, true, question, "1\r", "scenario", "crash", "--predict"); n < 2 {
			t.Errorf("%d questions", n)
		}
	})
	t.Run("quiz", func(t *testing.T) {
		if n := atEachPrompt(t, true, question, "1\r", "quiz", "--seed", "6"); n != 5 {
			t.Errorf("%d questions, want 5", n)
		}
	})
	t.Run("exercise, while the program runs", func(t *testing.T) {
		cache := pgtest.CacheDir(t)
		mark := filepath.Join(t.TempDir(), "running")
		r := startInteractive(t, cache, true, "exercise", "ship", "--", "sh", "-c", "touch "+mark+"; exec sleep 600")
		for {
			if _, err := os.Stat(mark); err == nil {
				break
			}
			select {
			case <-r.exited:
				t.Fatalf("ended before the program ran:\n%s", r.output())
			case <-time.After(20 * time.Millisecond):
			}
		}
		r.interrupt(cache, "exercise ship -- sh -c 'sleep 600'")
	})
}
