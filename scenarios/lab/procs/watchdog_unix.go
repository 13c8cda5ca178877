//go:build unix

package procs

import (
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
)

// watchdogScript, once its standard input ends, which happens when the
// lab dies (or exits), signals every process group it was told about
// ("group PGID SIG": macOS's children), and kills every process in the
// cgroups it was told about ("cgroup DIR": Linux's Groups, where the lab
// may make cgroups), then removes those. It writes "kill -KILL -PGID",
// without "--": dash (Debian's sh) refuses "--" there, and bash takes
// both forms. What the lab ended itself is forgotten ("forget PGID",
// "uncgroup DIR"): once a group's processes are gone, its number may be
// given to someone else's group.
const watchdogScript = `trap '' INT TERM HUP
groups=
cgroups=
while read -r verb a b; do
  case $verb in
  group) groups="$groups $b:$a" ;;
  forget) kept=; for g in $groups; do [ "${g#*:}" = "$a" ] || kept="$kept $g"; done; groups=$kept ;;
  cgroup) cgroups="$cgroups $a" ;;
  uncgroup) kept=; for c in $cgroups; do [ "$c" = "$a" ] || kept="$kept $c"; done; cgroups=$kept ;;
  esac
done
for g in $groups; do kill -"${g%%:*}" -"${g#*:}" 2>/dev/null; done
for c in $cgroups; do echo 1 2>/dev/null >"$c/cgroup.kill"; done
for c in $cgroups; do
  n=0
  until rmdir "$c" 2>/dev/null || [ ! -d "$c" ] || [ $n = 100 ]; do sleep 0.05; n=$((n+1)); done
done
`

var watchdog struct {
	sync.Mutex
	in    io.WriteCloser
	shell string // /bin/sh; a test names one that is not there
}

// tell tells the watchdog (started on first use) one line. A watchdog
// that cannot start, or has died, is an error: what it was to end could
// outlive the lab.
func tell(format string, a ...any) error {
	watchdog.Lock()
	defer watchdog.Unlock()
	if watchdog.in == nil {
		shell := watchdog.shell
		if shell == "" {
			shell = "/bin/sh"
		}
		w := exec.Command(shell, "-c", watchdogScript)
		w.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		in, err := w.StdinPipe()
		if err == nil {
			err = w.Start()
		}
		if err != nil {
			return fmt.Errorf("the watchdog that ends the lab's children with it (%s) could not start: %w", shell, err)
		}
		watchdog.in = in
	}
	if _, err := fmt.Fprintf(watchdog.in, format+"\n", a...); err != nil {
		return fmt.Errorf("the watchdog that ends the lab's children with it is gone: %w", err)
	}
	return nil
}

// watchGroup asks the watchdog to send sig to process group pgid when the
// lab dies.
func watchGroup(pgid int, sig string) error { return tell("group %d %s", pgid, sig) }

// signalName is how the watchdog names the signal.
func signalName(how OnParentDeath) string {
	if how == Interrupt {
		return "INT"
	}
	return "KILL"
}

// forgetGroup tells the watchdog that group pgid is gone (the lab killed
// it and its leader was reaped), so that it never signals the number
// again: process ids are reused, soon on a busy machine.
func forgetGroup(pgid int) { forget("forget %d", pgid) }

// forget tells a watchdog, if one runs, that something is gone.
func forget(format string, a ...any) {
	watchdog.Lock()
	defer watchdog.Unlock()
	if watchdog.in != nil {
		fmt.Fprintf(watchdog.in, format+"\n", a...)
	}
}
