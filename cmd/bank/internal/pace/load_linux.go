package pace

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// runnable is how many tasks are running or waiting for a core now
// (/proc/stat's procs_running).
func runnable() (float64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("procs_running ")); ok {
			n, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
			return n, err == nil
		}
	}
	return 0, false
}

// loadAverage is the kernel's one-minute load average.
func loadAverage() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := bytes.Fields(b)
	if len(f) == 0 {
		return 0, false
	}
	n, err := strconv.ParseFloat(string(f[0]), 64)
	return n, err == nil
}

// GroupCPU is the processor time used so far by the processes of group
// pgid that are still there (user and system, from /proc). ok is false
// where it cannot be read.
func GroupCPU(pgid int) (time.Duration, bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	var ticks int64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// After the command, in parentheses: state, ppid, pgrp, … utime
		// (14th field) and stime (15th).
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 13 {
			continue
		}
		if g, err := strconv.Atoi(string(f[2])); err != nil || g != pgid {
			continue
		}
		u, _ := strconv.ParseInt(string(f[11]), 10, 64)
		s, _ := strconv.ParseInt(string(f[12]), 10, 64)
		ticks += u + s
	}
	return time.Duration(ticks) * time.Second / 100, true // USER_HZ is 100 on Linux
}
