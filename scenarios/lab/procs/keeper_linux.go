package procs

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A Group's program is started, on Linux, by a keeper: a small process of
// the lab's, the lab's own binary once more (/proc/self/exe), which knows
// itself by its argv[0] before main runs (init). The keeper
//   - is a child subreaper (PR_SET_CHILD_SUBREAPER): a process of the
//     program's whose parent dies (a double fork, a daemon) becomes the
//     keeper's child instead of init's, whatever session it went to with
//     setsid and whatever it did to its environment, so that everything
//     the program started is found by following /proc's PPid links down
//     from the keeper;
//   - kills all of it when the program has exited, and when the lab
//     closes its end of a pipe (Kill, or the lab's death, even by
//     SIGKILL: the kernel closes the pipe then), and waits until it is
//     gone (it has no child left);
//   - then exits as the program did, so that the lab sees the program's
//     exit status as its own child's.
//
// The keeper is in a process group of its own, so that what the lab does
// to the program's group (SIGSTOP) does not reach it.

// keeperName is the keeper's argv[0].
const keeperName = "bank: keeper"

// keeperPath is the binary that becomes the keeper: the lab's own (a test
// names one that is not there).
var keeperPath = "/proc/self/exe"

func init() {
	if len(os.Args) > 6 && os.Args[0] == keeperName {
		os.Exit(keep(os.Args[1:]))
	}
}

// keep is the keeper. Its arguments: the signal for the program when the
// lab dies (KILL, or INT followed by KILL after grace milliseconds), the
// cgroup to join ("-": none), the account to run the program as
// ("UID:GID", "-": the keeper's), the program's path, and its argv. Its
// descriptor 3 is the lab's pipe; on descriptor 4 it reports "ok PID" or
// "error WHY".
//
// It is long because the keeper is a program of its own, and this is all
// of it, in the order it runs: join the cgroup, start the program, report,
// then wait for it or for the lab to die.
func keep(args []string) int {
	how, graceMS, cgroup, account, path, argv := args[0], args[1], args[2], args[3], args[4], args[5:]
	// The program's parent-death signal comes when the thread that
	// started it ends: this one, which lives as long as the keeper.
	runtime.LockOSThread()
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	report := os.NewFile(4, "report")
	fail := func(err error) int {
		fmt.Fprintf(report, "error %v\n", err)
		return 127
	}
	if name, err := unix.BytePtrFromString("bank-keeper"); err == nil {
		unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(name)), 0, 0, 0)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail(fmt.Errorf("the keeper of its processes cannot be their subreaper: %w", err))
	}
	// Signals meant for the lab or the program are not the keeper's: it
	// ends when the lab says so, or when the program has.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	if cgroup != "-" {
		os.WriteFile(cgroup+"/cgroup.procs", []byte("0"), 0) // where it fails, the keeper alone holds them
	}
	sys := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if how == "INT" {
		sys.Pdeathsig = syscall.SIGINT
	}
	if uid, gid, ok := strings.Cut(account, ":"); ok {
		u, _ := strconv.ParseUint(uid, 10, 32)
		g, _ := strconv.ParseUint(gid, 10, 32)
		sys.Credential = &syscall.Credential{Uid: uint32(u), Gid: uint32(g), Groups: []uint32{}}
	}
	program, err := os.StartProcess(path, argv, &os.ProcAttr{Env: os.Environ(), Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}, Sys: sys})
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(report, "ok %d\n", program.Pid)
	report.Close()

	// Every child is reaped here, the program's orphans among them.
	var status syscall.WaitStatus
	exited := make(chan struct{})    // the program has exited
	reaped := make(chan struct{}, 1) // a child has been reaped
	gone := make(chan struct{})      // no child is left, so no descendant either
	go func() {
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, 0, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil { // ECHILD
				close(gone)
				return
			}
			if pid == program.Pid {
				status = ws
				close(exited)
			}
			select {
			case reaped <- struct{}{}:
			default:
			}
		}
	}()
	ended := make(chan struct{}) // the lab has closed its pipe
	go func() {
		io.Copy(io.Discard, os.NewFile(3, "lab"))
		close(ended)
	}()
	select {
	case <-exited:
	case <-ended:
		if how == "INT" {
			syscall.Kill(-program.Pid, syscall.SIGINT)
			grace, _ := strconv.Atoi(graceMS)
			select {
			case <-exited:
			case <-time.After(time.Duration(grace) * time.Millisecond):
			}
		}
	}
	// Until no child is left, kill every descendant: one that forks as
	// the others die is found on the next round. One the keeper may not
	// kill (it became another account's through a setuid program) or that
	// will not die (stuck in the kernel) does not hold the lab up for
	// ever.
	self := os.Getpid()
	giveUp := time.After(keeperGiveUp)
	for {
		if noChild() { // the common case: nothing left to look for
			<-gone
			leaveCgroup(cgroup)
			return exitAs(status)
		}
		for _, pid := range descendants(self) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		select {
		case <-gone:
			leaveCgroup(cgroup)
			return exitAs(status)
		case <-giveUp:
			select {
			case <-exited:
				return exitAs(status)
			default:
				return 1
			}
		case <-reaped:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// leaveCgroup moves the keeper, whose program's processes are all gone,
// out of its cgroup into the lab's, and removes it: the lab would, or its
// watchdog, but both may have been killed at once (a kill of all the
// user's processes), and the empty cgroup would stay. One that is not
// empty stays, for them.
func leaveCgroup(dir string) {
	if dir == "-" {
		return
	}
	if os.WriteFile(filepath.Join(filepath.Dir(dir), "cgroup.procs"), []byte("0"), 0) == nil {
		syscall.Rmdir(dir)
	}
}

// keeperGiveUp is how long the keeper goes on killing what is left before
// it gives up on a process that will not die.
const keeperGiveUp = 10 * time.Second

// noChild reports whether the keeper has no child left, reaped or not
// (waitid with WNOWAIT leaves a dead one to the reaper).
func noChild() bool {
	var info unix.Siginfo
	return unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil) == unix.ECHILD
}

// descendants lists the processes below pid, following /proc's PPid
// links down.
func descendants(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(p); ok {
			children[ppid] = append(children[ppid], p)
		}
	}
	var out []int
	for next := []int{pid}; len(next) > 0; {
		p := next[0]
		next = append(next[1:], children[p]...)
		out = append(out, children[p]...)
	}
	return out
}

// parentOf is pid's parent, from /proc/PID/stat.
func parentOf(pid int) (int, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name may hold spaces and parentheses: fields start
	// after the last ')'. Then: state, ppid.
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// exitAs ends the keeper as ws says the program ended: with its exit
// status, or killed by its signal.
func exitAs(ws syscall.WaitStatus) int {
	if ws.Exited() {
		return ws.ExitStatus()
	}
	if !ws.Signaled() {
		return 1
	}
	sig := ws.Signal()
	if sig == syscall.SIGKILL {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	// Go's runtime catches the other signals itself, and does not give
	// back their default action: a shell, in the keeper's place (exec:
	// the same process), dies of the signal instead.
	syscall.Exec("/bin/sh", []string{"sh", "-c", `ulimit -c 0 2>/dev/null; kill -"$0" $$; exit "$1"`,
		strconv.Itoa(int(sig)), strconv.Itoa(128 + int(sig))}, nil)
	return 128 + int(sig)
}
