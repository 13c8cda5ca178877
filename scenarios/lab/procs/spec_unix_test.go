//go:build unix

package procs

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func role(name string) *Spec {
	return &Spec{Path: os.Args[0], Args: []string{"-test.run=^$"}, Env: []string{name + "=1"}}
}

// TestStartReady: a server of the lab's is ready once it says so, with
// the address it said; one that exits first is an error that carries
// what it wrote to standard error.
func TestStartReady(t *testing.T) {
	c, err := role(serveRole).StartReady(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "http://127.0.0.1:1" {
		t.Errorf("Addr %q, want the address of its ready line", c.Addr)
	}
	if err := c.Stop(); err == nil || !strings.Contains(err.Error(), "terminated") {
		t.Errorf("Stop: %v, want the signal that ended it", err)
	}
	if err := c.Stop(); err != nil {
		t.Errorf("a second Stop: %v, want nil", err)
	}

	spec := role(failRole)
	_, err = spec.StartReady(context.Background())
	if err == nil || !strings.Contains(err.Error(), "cannot listen: address in use") {
		t.Fatalf("a server that exits at once: %v, want its standard error", err)
	}
}

// TestRun: a tool runs to its end, its output kept, its exit status
// returned.
func TestRun(t *testing.T) {
	spec := role(failRole)
	err := spec.Run(context.Background())
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("Run: %v, want exit status 3", err)
	}
	if !strings.Contains(spec.Output.String(), "address in use") {
		t.Errorf("Output %q, want what it wrote", spec.Output.String())
	}
}

// TestRunProgramNotFound: a tool that is not there is an error that says
// so, and its output, of which there is none, can still be read.
func TestRunProgramNotFound(t *testing.T) {
	spec := Spec{Path: "no-such-program-of-the-lab", Args: []string{"-a"}}
	err := spec.Run(context.Background())
	if !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("Run: %v, want not found", err)
	}
	if got := spec.Output.LastLines(3); got != "" {
		t.Fatalf("Output %q, want nothing", got)
	}
}

// TestStopGrace: a child that ignores SIGTERM is killed once StopGrace
// has passed.
func TestStopGrace(t *testing.T) {
	for _, group := range []bool{false, true} {
		spec := &Spec{Path: "/bin/sh", Args: []string{"-c", `trap '' TERM; echo ready x; while :; do sleep 1; done`},
			Group: group, StopGrace: 200 * time.Millisecond}
		c, err := spec.StartReady(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := c.Stop(); err == nil || !strings.Contains(err.Error(), "killed") {
			t.Errorf("group %t: Stop: %v, want it killed", group, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("group %t: Stop took %s", group, d)
		}
		if group && Running(c.PID()) {
			t.Errorf("the group's leader still runs")
		}
	}
}

// BenchmarkGroupRun: what it costs to start a Group's program and see it
// end with all it started (on Linux, through its keeper), for a program
// that does nothing.
func BenchmarkGroupRun(b *testing.B) {
	for b.Loop() {
		spec := &Spec{Path: "/bin/true", Group: true}
		if err := spec.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
