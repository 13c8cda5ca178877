//go:build linux

package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/pace"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
	"github.com/zudojs/bank/scenarios/lab/procs"
)

// TestLabSurvivesCutRuns: bank lab, its page's run of the no-fencing
// mistake cut by the browser at several moments (the request's
// connection closed), then a whole run, which must answer; then Ctrl-C
// with a run in flight (a bank serve replica of its story running), which
// is cut, not waited for; bank lab ends
// (exit 0, its documented normal end) and leaves nothing running. Once a
// cut no-fencing run deadlocked on server A's claim, holding the page's
// one-run-at-a-time lock: every later run hung, and Ctrl-C waited 10 s
// for the run in flight.
func TestLabSurvivesCutRuns(t *testing.T) {
	t.Parallel()
	cache := pgtest.CacheDir(t)
	cmd := command(t, cache, "lab", "--addr", "127.0.0.1:0")
	cmd.Env = append(cmd.Env, procs.ReadyEnv+"=1")
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	said := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(stderr)
		said <- string(b)
	}()
	out := bufio.NewScanner(stdout)
	base := ""
	for base == "" && out.Scan() {
		base, _ = strings.CutPrefix(out.Text(), "ready ")
	}
	if base == "" {
		t.Fatalf("bank lab never said it was ready:\n%s", <-said)
	}
	go io.Copy(io.Discard, stdout)

	run := func(ctx context.Context, name string) (int, string, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/api/run?kind=mistake&name="+name, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	// The cuts' moments are the fault, not a claim about speed.
	for _, after := range []time.Duration{0, 30 * time.Millisecond, 150 * time.Millisecond, 400 * time.Millisecond} {
		ctx, cancel := context.WithTimeout(context.Background(), after)
		run(ctx, "no-fencing")
		cancel()
	}
	// A bound against a hang, not a speed goal.
	ctx, cancel := context.WithTimeout(context.Background(), pace.Stretch(60*time.Second))
	defer cancel()
	if code, body, err := run(ctx, "no-fencing"); err != nil || code != http.StatusOK {
		t.Fatalf("the run after the cut ones: %d %v %.300s", code, err, body)
	}

	// Ctrl-C with a run in flight: memory-keys starts bank serve replicas
	// of its own; the signal goes once one of them runs (the story is then
	// in its middle), not after a time.
	inFlight := make(chan int, 1)
	go func() {
		code, _, _ := run(context.Background(), "memory-keys")
		inFlight <- code
	}()
	for replica := false; !replica; time.Sleep(2 * time.Millisecond) {
		for _, p := range family(cache) {
			replica = replica || strings.Contains(p.cmdline, " serve --in-place")
		}
		select {
		case code := <-inFlight:
			t.Fatalf("the memory-keys run answered %d before any replica of its own was seen", code)
		default:
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	var rest string
	select {
	case rest = <-said:
	case <-time.After(pace.Stretch(20 * time.Second)): // a hang, not a speed goal
		t.Fatalf("bank lab still running 20 s after SIGINT")
	}
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitcode.OK || strings.Contains(rest, "panic") {
		t.Errorf("exit %d, want 0:\n%s", code, rest)
	}
	if code := <-inFlight; code == http.StatusOK {
		t.Errorf("the run in flight at Ctrl-C was waited for and answered, not cut")
	}
	for deadline := pace.After(5 * time.Second); len(family(cache)) > 0 && !deadline.Passed(); time.Sleep(50 * time.Millisecond) {
	}
	if left := family(cache); len(left) > 0 {
		t.Errorf("left running 5 s after it ended: %v", left)
	}
}
