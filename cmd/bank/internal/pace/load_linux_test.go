package pace

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGroupWanting: a process that spins wants the processor all the
// time it lives, however busy the machine (running, or waiting in a run
// queue); one that sleeps hardly at all. The sleeper is measured from
// the moment it sleeps: starting it (sh, exec, the loader) wants the
// processor too, 95 ms of it at a load of 33 in CI.
func TestGroupWanting(t *testing.T) {
	for _, c := range []struct {
		script string
		spins  bool
	}{{"while :; do :; done", true}, {"exec sleep 5", false}} {
		cmd := exec.Command("sh", "-c", c.script)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pgid := cmd.Process.Pid
		if !c.spins {
			asleep(t, pgid)
		}
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

// asleep waits until process pid is sleep(1), asleep.
func asleep(t *testing.T, pid int) {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	for start := time.Now(); time.Since(start) < time.Minute; time.Sleep(5 * time.Millisecond) {
		comm, _ := os.ReadFile(dir + "comm")
		stat, _ := os.ReadFile(dir + "stat")
		// stat: pid (comm) state …
		if strings.TrimSpace(string(comm)) == "sleep" && strings.Contains(string(stat), ") S ") {
			return
		}
	}
	t.Fatalf("process %d never slept", pid)
}
