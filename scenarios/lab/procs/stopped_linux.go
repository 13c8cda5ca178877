package procs

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// procStat is what /proc/PID/stat (or a task's) says: its state letter
// and its process group.
func procStat(path string) (state byte, pgrp int, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	// The command name may hold spaces and parentheses: fields start
	// after the last ')'. Then: state, ppid, pgrp.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	pgrp, err = strconv.Atoi(string(f[2]))
	return f[0][0], pgrp, err == nil
}

// halted: stopped (T), stopped under a tracer (t), or no longer running
// (Z, X). None of these runs another instruction of the program.
func halted(state byte) bool {
	switch state {
	case 'T', 't', 'Z', 'X':
		return true
	}
	return false
}

// threadsStopped reports whether every thread of process pid has
// stopped (a process that is gone has).
func threadsStopped(pid int) bool {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/stat")
	for _, t := range tasks {
		if state, _, ok := procStat(t); ok && !halted(state) {
			return false
		}
	}
	return true
}

// processStopped: every thread of pid has stopped.
func processStopped(pid int) bool { return threadsStopped(pid) }

// groupStopped: every thread of every process in group pgid has stopped.
func groupStopped(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true // nothing to look at: trust the signal
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, pgrp, ok := procStat("/proc/" + e.Name() + "/stat"); ok && pgrp == pgid && !threadsStopped(pid) {
			return false
		}
	}
	return true
}
