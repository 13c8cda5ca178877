//go:build unix && !linux

package procs

import (
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
)

func bind(cmd *exec.Cmd, how OnParentDeath) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// watchdogScript signals every process group it was told about once its
// standard input ends, which happens when the lab dies (or exits).
const watchdogScript = `trap '' INT TERM HUP
groups=
while read -r group sig; do groups="$groups $sig:$group"; done
for g in $groups; do kill -"${g%%:*}" -- -"${g#*:}" 2>/dev/null; done
`

var watchdog struct {
	sync.Mutex
	in io.WriteCloser
}

func started(cmd *exec.Cmd, how OnParentDeath) {
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
	name := "KILL"
	if how == Interrupt {
		name = "INT"
	}
	fmt.Fprintln(watchdog.in, strconv.Itoa(cmd.Process.Pid), name)
}

func zombie(int) bool { return false }
