package pgserver

import (
	"os"
	"strings"
	"time"
)

// SetJobLimit shortens, for the Clones whose Throwaway comes next, the
// time each job set aside may take; it returns a function that puts the
// limit back.
func SetJobLimit(d time.Duration) (restore func()) {
	was := jobLimit
	jobLimit = d
	return func() { jobLimit = was }
}

// Usage is usage, for the tests: the space the files below a directory take.
var Usage = usage

// WithStartLimits is o with the bounds on a start (stallLimit,
// startLimit) set for a test.
func WithStartLimits(o Options, stall, limit time.Duration) Options {
	o.stallLimit, o.startLimit = stall, limit
	return o
}

// SlotFree reports whether the slot whose log is at logPath is free: its
// lock can be taken (and is let go at once).
func SlotFree(logPath string) bool {
	f, err := os.Open(strings.TrimSuffix(logPath, ".log") + ".lock")
	if err != nil {
		return false
	}
	defer f.Close()
	ok, _ := tryLock(f)
	return ok
}
