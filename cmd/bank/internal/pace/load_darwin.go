package pace

import (
	"encoding/binary"
	"time"

	"golang.org/x/sys/unix"
)

// runnable is not told by macOS: the load average stands for it.
func runnable() (float64, bool) { return loadAverage() }

// loadAverage is the kernel's one-minute load average (sysctl vm.loadavg:
// three fixed-point figures and their scale).
func loadAverage() (float64, bool) {
	b, err := unix.SysctlRaw("vm.loadavg")
	if err != nil || len(b) < 24 {
		return 0, false
	}
	one := binary.LittleEndian.Uint32(b[0:4])
	scale := binary.LittleEndian.Uint64(b[16:24])
	if scale == 0 {
		return 0, false
	}
	return float64(one) / float64(scale), true
}

// GroupCPU is not read on macOS.
func GroupCPU(pgid int) (time.Duration, bool) { return 0, false }

// GroupWanting is not read on macOS.
func GroupWanting(pgid int) (main, all time.Duration, ok bool) { return 0, 0, false }
