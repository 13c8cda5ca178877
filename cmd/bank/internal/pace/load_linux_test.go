package pace

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestGroupWanting: a process that spins wants the processor all the
// time it lives, however busy the machine (running, or waiting in a run
// queue); one that sleeps hardly at all.
func TestGroupWanting(t *testing.T) {
	for _, c := range []struct {
		script string
		spins  bool
	}{{"while :; do :; done", true}, {"sleep 5", false}} {
		cmd := exec.Command("sh", "-c", c.script)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pgid := cmd.Process.Pid
		m0, w0, ok := GroupWanting(pgid)
		start := time.Now()
		time.Sleep(500 * time.Millisecond)
		m1, w1, _ := GroupWanting(pgid)
		lived := time.Since(start)
		syscall.Kill(-pgid, syscall.SIGKILL)
		cmd.Wait()
		if !ok {
			t.Fatalf("%q: schedstat not read", c.script)
		}
		if m1-m0 != w1-w0 {
			t.Errorf("%q has one thread, but its main thread wanted %s and all %s", c.script, m1-m0, w1-w0)
		}
		wanted := w1 - w0
		if c.spins && wanted < lived/2 || !c.spins && wanted > lived/10 {
			t.Errorf("%q wanted the processor %s of %s", c.script, wanted, lived)
		}
	}
	if _, w, ok := GroupWanting(1 << 22); w != 0 || ok {
		t.Errorf("a group that does not exist: %s, %v", w, ok)
	}
}
