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
	var ticks int64
	ok := eachOfGroup(pgid, func(pid string, f [][]byte) {
		u, _ := strconv.ParseInt(string(f[11]), 10, 64) // utime
		s, _ := strconv.ParseInt(string(f[12]), 10, 64) // stime
		ticks += u + s
	})
	return time.Duration(ticks) * time.Second / 100, ok // USER_HZ is 100 on Linux
}

// GroupWanting is how long the threads of group pgid's processes still
// there have, so far, run on a core or waited in a run queue for one
// (/proc/PID/task/TID/schedstat): time a thread wanted the processor,
// however busy the machine; what it is not is time spent asleep (waiting
// on a timer, the network or a lock). main sums their main threads only,
// where a program's event loop, or its only thread, runs; all sums every
// thread (a runtime's others compile, collect garbage, or run its
// goroutines). ok is false where they cannot be read.
func GroupWanting(pgid int) (main, all time.Duration, ok bool) {
	read := false
	found := eachOfGroup(pgid, func(pid string, _ [][]byte) {
		tasks, _ := os.ReadDir("/proc/" + pid + "/task")
		for _, task := range tasks {
			b, err := os.ReadFile("/proc/" + pid + "/task/" + task.Name() + "/schedstat")
			f := bytes.Fields(b)
			if err != nil || len(f) < 2 {
				continue
			}
			run, _ := strconv.ParseInt(string(f[0]), 10, 64)
			wait, _ := strconv.ParseInt(string(f[1]), 10, 64)
			all += time.Duration(run + wait)
			if task.Name() == pid {
				main += time.Duration(run + wait)
			}
			read = true
		}
	})
	return main, all, found && read
}

// eachOfGroup calls f with the pid and the fields after the command of
// /proc/PID/stat (state, ppid, pgrp, …) of each process of group pgid;
// false when /proc cannot be read.
func eachOfGroup(pgid int, f func(pid string, fields [][]byte)) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := bytes.Fields(b[i+1:])
		if len(fields) < 13 {
			continue
		}
		if g, err := strconv.Atoi(string(fields[2])); err != nil || g != pgid {
			continue
		}
		f(e.Name(), fields)
	}
	return true
}
