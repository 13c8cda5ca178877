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
// standard input ends, which happens when the lab dies (or exits). It
// writes "kill -KILL -PGID", without "--": dash (Debian's sh) refuses
// "--" there, and bash takes both forms.
const watchdogScript = `trap '' INT TERM HUP
groups=
while read -r group sig; do groups="$groups $sig:$group"; done
for g in $groups; do kill -"${g%%:*}" -"${g#*:}" 2>/dev/null; done
`

var watchdog struct {
	sync.Mutex
	in io.WriteCloser
}

// watchGroup asks the watchdog (started on first use) to send sig to
// process group pgid when the lab dies.
func watchGroup(pgid int, sig string) {
	watchdog.Lock()
	defer watchdog.Unlock()
	if watchdog.in == nil {
		w := exec.Command("/bin/sh", "-c", watchdogScript)
		w.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		in, err := w.StdinPipe()
		if err != nil || w.Start() != nil {
			return
		}
		watchdog.in = in
	}
	fmt.Fprintln(watchdog.in, pgid, sig)
}
