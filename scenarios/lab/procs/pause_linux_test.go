package procs

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// spinner is the test binary as a busy, many-threaded program.
func spinner(group bool) *Spec {
	return &Spec{Path: os.Args[0], Args: []string{"-test.run=^$"}, Env: []string{spinRole + "=1"}, Group: group}
}

// running lists the threads of pid that are not stopped, right now.
func running(pid int) []string {
	var r []string
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/stat")
	for _, task := range tasks {
		if state, _, ok := procStat(task); ok && !halted(state) {
			r = append(r, filepath.Base(filepath.Dir(task))+":"+string(state))
		}
	}
	return r
}

// TestPauseReturnsOnceStopped: when Pause returns, no thread of the
// process (of any process in a Group's group) runs any more, every time.
// With a bare kill(SIGSTOP) some threads of a busy process are still
// running at that moment.
func TestPauseReturnsOnceStopped(t *testing.T) {
	for _, group := range []bool{false, true} {
		t.Run(map[bool]string{false: "process", true: "group"}[group], func(t *testing.T) {
			c, err := spinner(group).Start(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Kill()
			time.Sleep(200 * time.Millisecond) // its threads spinning
			for i := range 20 {
				if err := c.Pause(); err != nil {
					t.Fatal(err)
				}
				if r := running(c.PID()); len(r) > 0 {
					t.Fatalf("pause %d returned with threads still running: %v", i, r)
				}
				if err := c.Resume(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}
