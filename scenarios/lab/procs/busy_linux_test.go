package procs

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBusy: a Group's busy time grows by at least the CPU its program
// spins for, and hardly while it sleeps; without a cgroup there is none.
func TestBusy(t *testing.T) {
	needCgroups(t)
	// Spin (about 0.3 s on a quiet machine), say so, then sleep.
	spin := `i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; echo spun; exec sleep 600`
	out := &Tail{}
	g, err := (&Spec{Path: "/bin/sh", Args: []string{"-c", spin}, Group: true, Stdout: out}).Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer g.Kill()
	before, ok := g.Busy()
	if !ok {
		t.Fatal("no busy time for a Group in a cgroup")
	}
	for !strings.Contains(out.String(), "spun\n") {
		select {
		case <-g.Exited():
			t.Fatalf("it ended: %s", out.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	spun, _ := g.Busy()
	// Its CPU time, as the kernel counts it for the process (in ticks).
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(g.PID()) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	cpu := time.Duration(utime+stime) * time.Second / 100 // USER_HZ
	if d := spun.Less(before).Sum(); d < cpu-20*time.Millisecond || cpu < 50*time.Millisecond {
		t.Errorf("busy grew by %s while it spun for %s of CPU", d, cpu)
	}
	time.Sleep(300 * time.Millisecond)
	slept, _ := g.Busy()
	if d := slept.Less(spun).Sum(); d > 100*time.Millisecond {
		t.Errorf("busy grew by %s while it slept for 300 ms", d)
	}
	g.Kill()
	if _, ok := g.Busy(); ok {
		t.Error("a busy time for a Group that has ended")
	}
	plain, err := (&Spec{Path: "/bin/sleep", Args: []string{"600"}}).Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Kill()
	if _, ok := plain.Busy(); ok {
		t.Error("a busy time for a child that is not a Group")
	}
}
