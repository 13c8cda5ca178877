//go:build unix

package procs

import (
	"errors"
	"os/exec"
	"syscall"
)

// runAs makes cmd run as the account (as is, when there is none). The
// parent-death signal still reaches it: see bind.
func runAs(cmd *exec.Cmd, a *Account) error {
	if a == nil {
		return nil
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(a.UID), Gid: uint32(a.GID), Groups: []uint32{}}
	return nil
}

// Running reports whether pid is a live process. A zombie counts as gone.
func Running(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return !zombie(pid)
}

// restrict: a restricted token is Windows's; on Unix, Account drops root.
func restrict(*exec.Cmd) error { return nil }

func closeToken(*exec.Cmd) {}
