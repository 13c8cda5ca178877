package procs

import "time"

// A CPUTime is what a Group's processes have asked of the processors since
// it started (see Child.Busy): how long they ran, and how long one of them
// at least was ready to run but waited for a core.
type CPUTime struct {
	Ran, Waited time.Duration
}

// Sum is all the time the program was busy: running, or waiting to run.
func (c CPUTime) Sum() time.Duration { return c.Ran + c.Waited }

// Less is c's growth since an earlier reading.
func (c CPUTime) Less(earlier CPUTime) CPUTime {
	return CPUTime{Ran: c.Ran - earlier.Ran, Waited: c.Waited - earlier.Waited}
}
