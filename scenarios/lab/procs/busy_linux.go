package procs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Busy is how long, in all, a Group's processes have run (its cgroup's
// cpu.stat usage_usec: Ran) and how long one of them at least was ready to
// run but had no CPU (cpu.pressure's "some" total: Waited), since it
// started. Between two readings, the program spent at least the time
// between them less the difference of their sums asleep or blocked of its
// own accord: on its timers, say, however busy the machine was. ok is
// false where the child has no cgroup of its own (not a Group, a machine
// where the lab may make none, or one without pressure figures) or it has
// ended.
func (c *Child) Busy() (b CPUTime, ok bool) {
	if c.group == nil || c.group.cgroup == "" {
		return CPUTime{}, false
	}
	ran, ok := field(filepath.Join(c.group.cgroup, "cpu.stat"), "usage_usec ")
	if !ok {
		return CPUTime{}, false
	}
	waited, ok := field(filepath.Join(c.group.cgroup, "cpu.pressure"), "some ")
	if !ok {
		return CPUTime{}, false
	}
	return CPUTime{Ran: time.Duration(ran) * time.Microsecond, Waited: time.Duration(waited) * time.Microsecond}, true
}

// field reads the number on the line of file that starts with line: the
// line's last word, or its total= for a pressure line.
func field(file, line string) (int64, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, line) {
			continue
		}
		words := strings.Fields(l)
		last := words[len(words)-1]
		last = strings.TrimPrefix(last, "total=")
		n, err := strconv.ParseInt(last, 10, 64)
		return n, err == nil
	}
	return 0, false
}
