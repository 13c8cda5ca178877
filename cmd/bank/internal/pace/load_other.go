//go:build !linux && !darwin

package pace

import "time"

// runnable and loadAverage are not known here (Windows): limits stay as
// set for a quiet machine.
func runnable() (float64, bool)    { return 0, false }
func loadAverage() (float64, bool) { return 0, false }

// GroupCPU is not read here.
func GroupCPU(pgid int) (time.Duration, bool) { return 0, false }

// GroupWanting is not read here.
func GroupWanting(pgid int) (main, all time.Duration, ok bool) { return 0, 0, false }
