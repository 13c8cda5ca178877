//go:build !linux

package procs

import "time"

// Busy: outside Linux the lab reads no cgroup, so it cannot tell how long
// a program ran or waited to run (see busy_linux.go).
func (c *Child) Busy() (time.Duration, bool) { return 0, false }
