package procs

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// killMarked kills every process of this user's that carries mark in its
// environment: what a group started and then lost track of (a setsid
// daemon, a child whose parent died), wherever it went. It repeats until
// none is left, so that one forking as the others die is caught too.
func killMarked(mark string) {
	self := os.Getpid()
	want := []byte(mark + "=")
	for round := 0; round < 10; round++ {
		found := false
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			pid, err := strconv.Atoi(filepath.Base(d))
			if err != nil || pid == self {
				continue
			}
			env, err := os.ReadFile(d + "/environ")
			if err != nil || !hasVar(env, want) {
				continue
			}
			if zombie(pid) {
				continue
			}
			found = true
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if !found {
			return
		}
	}
}

// hasVar reports whether a NUL-separated environment has a variable
// starting with prefix ("NAME=").
func hasVar(env, prefix []byte) bool {
	for _, v := range bytes.Split(env, []byte{0}) {
		if bytes.HasPrefix(v, prefix) {
			return true
		}
	}
	return false
}
