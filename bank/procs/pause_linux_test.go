package procs

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// spinRole makes the test binary a busy, many-threaded program: the kind
// of server whose threads go on running for a moment after kill(SIGSTOP)
// has returned.
const spinRole = "BANK_PROCS_TEST_SPIN"

func TestMain(m *testing.M) {
	if os.Getenv(spinRole) != "" {
		for range 4 * runtime.NumCPU() {
			go func() {
				for n := 0; ; n++ {
					if n%1000 == 0 {
						runtime.Gosched()
					}
				}
			}()
		}
		time.Sleep(time.Minute) // the test kills it long before
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func spinner(t *testing.T) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), spinRole+"=1")
	return cmd
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
// process runs any more, every time. With a bare kill(SIGSTOP) some
// threads of a busy process are still running at that moment.
func TestPauseReturnsOnceStopped(t *testing.T) {
	t.Run("process", func(t *testing.T) {
		cmd := spinner(t)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		time.Sleep(200 * time.Millisecond) // its threads spinning
		for i := range 20 {
			if err := Pause(cmd.Process); err != nil {
				t.Fatal(err)
			}
			if r := running(cmd.Process.Pid); len(r) > 0 {
				t.Fatalf("pause %d returned with threads still running: %v", i, r)
			}
			if err := Resume(cmd.Process); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	t.Run("group", func(t *testing.T) {
		g, err := StartGroup(spinner(t))
		if err != nil {
			t.Fatal(err)
		}
		defer g.Kill()
		time.Sleep(200 * time.Millisecond)
		for i := range 20 {
			if err := g.Pause(); err != nil {
				t.Fatal(err)
			}
			if r := running(g.PID()); len(r) > 0 {
				t.Fatalf("pause %d returned with threads still running: %v", i, r)
			}
			if err := g.Resume(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}
