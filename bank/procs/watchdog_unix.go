//go:build unix

package procs

import (
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
)

// watchdogScript signals every process group it was told about once its
// standard input ends, which happens when the lab dies (or exits), and
// kills every process that carries one of the marks it was told of, found
// in /proc where there is one (a daemon that left its group keeps the
// mark in its environment). It writes "kill -KILL -PGID", without "--":
// dash (Debian's sh) refuses "--" there, and bash takes both forms. A
// group the lab has killed itself is forgotten ("forget PGID"): once its
// processes are gone, its number may be given to someone else's group.
const watchdogScript = `trap '' INT TERM HUP
groups=
marks=
while read -r group sig mark; do
  if [ "$group" = forget ]; then
    kept=; for g in $groups; do [ "${g#*:}" = "$sig" ] || kept="$kept $g"; done; groups=$kept
  else
    groups="$groups $sig:$group"; marks="$marks $mark"
  fi
done
for g in $groups; do kill -"${g%%:*}" -"${g#*:}" 2>/dev/null; done
[ -d /proc/self ] || exit 0
pattern=
for m in $marks; do pattern="$pattern${pattern:+|}$m"; done
[ -n "$pattern" ] || exit 0
for round in 1 2 3; do
  found=$(grep -lzE "^($pattern)=" /proc/[0-9]*/environ 2>/dev/null) # status 2: some were unreadable
  [ -n "$found" ] || break
  for f in $found; do p=${f#/proc/}; kill -KILL "${p%/environ}" 2>/dev/null; done
done
`

var watchdog struct {
	sync.Mutex
	in    io.WriteCloser
	shell string // /bin/sh; a test names one that is not there
}

// watchGroup asks the watchdog (started on first use) to send sig to
// process group pgid when the lab dies, and to kill the processes that
// carry mark. A watchdog that cannot start, or has died, is an error: the
// child would outlive the lab.
func watchGroup(pgid int, sig, mark string) error {
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
	if _, err := fmt.Fprintln(watchdog.in, pgid, sig, mark); err != nil {
		return fmt.Errorf("the watchdog that ends the lab's children with it is gone: %w", err)
	}
	return nil
}

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
func forgetGroup(pgid int) {
	watchdog.Lock()
	defer watchdog.Unlock()
	if watchdog.in != nil {
		fmt.Fprintln(watchdog.in, "forget", pgid)
	}
}
