//go:build !linux

package procs

// Busy: outside Linux the lab reads no cgroup, so it cannot tell how long
// a program ran or waited to run (see busy_linux.go).
func (c *Child) Busy() (CPUTime, bool) { return CPUTime{}, false }
