package procs

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// needCgroups skips a test of the cgroups where the lab may make none
// (cgroup v2, as root or in a delegated subtree: CI runs as root).
func needCgroups(t *testing.T) string {
	t.Helper()
	dir := newCgroup()
	if dir == "" {
		t.Skip("the lab may make no cgroup here (cgroup v2: as root, or in a subtree delegated to the user)")
	}
	removeCgroup(dir)
	return filepath.Dir(dir)
}

// cgroupOf is the cgroup v2 path of pid.
func cgroupOf(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p
		}
	}
	return ""
}

// TestGroupHasACgroup: where the lab may make cgroups, a Group's program
// runs in one of its own, which is gone once the group is.
func TestGroupHasACgroup(t *testing.T) {
	parent := needCgroups(t)
	spec := &Spec{Path: "/bin/sh", Args: []string{"-c", "sleep 600"}, Group: true}
	g, err := spec.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cg := cgroupOf(g.PID())
	dir := filepath.Join(parent, filepath.Base(cg))
	if !strings.HasPrefix(filepath.Base(cg), "bank-"+strconv.Itoa(os.Getpid())+"-") {
		g.Kill()
		t.Fatalf("the program is in cgroup %q, not one of the lab's", cg)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("its cgroup is not under the lab's: %v", err)
	}
	g.Kill()
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("its cgroup %s is still there after Kill", dir)
	}
}

// TestCgroupHoldsWhatTheKeeperLost: a program that kills its keeper (its
// parent) before it escapes leaves orphans the keeper can no longer find;
// where the lab may make cgroups, they are still in the group's, and gone
// once the lab has seen the keeper die.
func TestCgroupHoldsWhatTheKeeperLost(t *testing.T) {
	needPython(t)
	needCgroups(t)
	tags := newTags(3)
	cleanUp(t, tags)
	flag := filepath.Join(t.TempDir(), "go")
	script := escapes(tags) + "while [ ! -e " + flag + " ]; do sleep 0.01; done; kill -KILL $PPID; exec sleep 600"
	spec := &Spec{Path: "/bin/sh", Args: []string{"-c", script}, Group: true, WaitDelay: time.Second}
	g, err := spec.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	waitAlive(t, tags)
	os.WriteFile(flag, nil, 0o600)
	<-g.Exited()
	if err := g.Err(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the keeper's end: %v, want it killed", err)
	}
	if left := alive(tags); len(left) > 0 {
		t.Errorf("still running once the keeper's end was seen: sleep %v", left)
	}
}

// TestWatchdogEmptiesCgroups: when the lab dies, the watchdog kills every
// process in the cgroups it was told of, and removes them.
func TestWatchdogEmptiesCgroups(t *testing.T) {
	parent := needCgroups(t)
	dir := filepath.Join(parent, "bank-test-"+randomHex(4))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	defer syscall.Rmdir(dir)
	sleeper := exec.Command("sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { sleeper.Wait(); close(exited) }()
	defer sleeper.Process.Kill()
	if err := os.WriteFile(dir+"/cgroup.procs", []byte(strconv.Itoa(sleeper.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	w := exec.Command("/bin/sh", "-c", watchdogScript)
	w.Stdin = strings.NewReader("cgroup " + dir + "\n")
	if out, err := w.CombinedOutput(); err != nil {
		t.Fatalf("the watchdog: %v %s", err, out)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second): // a hang, not a speed goal
		t.Fatal("the process in the cgroup outlived the watchdog")
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("the watchdog left the cgroup %s", dir)
	}
}

// TestCgroupGoneWhenLabAndWatchdogAreKilled: when the lab and its
// watchdog are killed together (a kill of all the user's processes), the
// keeper still kills what the program started, and leaves no empty
// cgroup behind: it removes its own.
func TestCgroupGoneWhenLabAndWatchdogAreKilled(t *testing.T) {
	needPython(t)
	parent := needCgroups(t)
	tags := newTags(4)
	cleanUp(t, tags)
	lab := exec.Command(os.Args[0], "-test.run=^$")
	lab.Env = append(os.Environ(), labRole+"=1", labScript+"="+escapes(tags)+"exec sleep "+tags[3])
	out, _ := lab.StdoutPipe()
	if err := lab.Start(); err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "started\n" {
		lab.Process.Kill()
		lab.Wait()
		t.Fatalf("the lab did not start its group: %q", line)
	}
	waitAlive(t, tags)
	dirs, _ := filepath.Glob(filepath.Join(parent, "bank-"+strconv.Itoa(lab.Process.Pid)+"-*"))
	if len(dirs) != 1 {
		lab.Process.Kill()
		lab.Wait()
		t.Fatalf("the lab's cgroups: %v, want one", dirs)
	}
	t.Cleanup(func() { removeCgroup(dirs[0]) })
	// The watchdog is the lab's child running the watchdog's script.
	var watchdogs []int
	procDirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range procDirs {
		pid, _ := strconv.Atoi(filepath.Base(d))
		cmd, _ := os.ReadFile(d + "/cmdline")
		if ppid, ok := parentOf(pid); ok && ppid == lab.Process.Pid && strings.Contains(string(cmd), watchdogScript) {
			watchdogs = append(watchdogs, pid)
		}
	}
	if len(watchdogs) != 1 {
		lab.Process.Kill()
		lab.Wait()
		t.Fatalf("the lab's watchdogs: %v, want one", watchdogs)
	}
	syscall.Kill(watchdogs[0], syscall.SIGKILL)
	lab.Process.Kill()
	lab.Wait()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, err := os.Stat(dirs[0])
		left := alive(tags)
		if len(left) == 0 && os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) { // a hang, not a speed goal
			t.Fatalf("5 s after the lab and its watchdog were killed: still running %v; the cgroup %s: %v", left, dirs[0], err)
		}
	}
}
