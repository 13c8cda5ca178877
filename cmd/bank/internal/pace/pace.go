// Package pace says how busy the machine is, so that the lab's time
// limits follow what the machine can do. A learner's laptop runs an
// editor, a browser and containers: a wait that is ample on a quiet
// machine may not be on a busy one, and running out of it there says
// nothing about the code being waited on. A Deadline set for a quiet
// machine stretches by how many times more work than cores the machine
// has while it runs (its load); when one still passes on a busy machine,
// Busy says so, and the judge reports that it could not tell rather than
// a failure.
package pace

import (
	"math"
	"runtime"
	"sync"
	"time"
)

// Max is the most a limit stretches: past it, the machine is too slow for
// the lab to tell anything, and a judge says so.
const Max = 8.0

// busyAt is the load, per core, above which a limit that passes is the
// machine's doing as much as the code's.
const busyAt = 1.5

var (
	once    sync.Once
	mu      sync.Mutex
	current = 1.0 // the load per core now, as sampled
	// override, for tests: a fixed load per core (0: measure).
	override float64
)

// sample keeps current up to date from the operating system's figures,
// a few times a second, for as long as the process lives; the first
// figures are read before it returns.
func sample() {
	smooth := 0.0
	look := func() {
		n, ok := runnable()
		if !ok {
			return
		}
		// An average over about two seconds of the tasks that want a core
		// (ours among them) per core, and the kernel's minute average.
		per := n / float64(runtime.NumCPU())
		if smooth == 0 {
			smooth = per
		}
		smooth += (per - smooth) * 0.15
		load := smooth
		if l, ok := loadAverage(); ok {
			load = math.Max(load, l/float64(runtime.NumCPU()))
		}
		mu.Lock()
		current = load
		mu.Unlock()
	}
	look()
	go func() {
		for {
			time.Sleep(250 * time.Millisecond)
			look()
		}
	}()
}

// Load is the machine's load per core now: about 1 when every core is
// busy and none has more to do, 5 when five tasks want each core.
func Load() float64 {
	once.Do(sample)
	mu.Lock()
	defer mu.Unlock()
	if override > 0 {
		return override
	}
	return current
}

// Factor is how many times a limit set for a quiet machine stretches now:
// 1 up to a load of one task a core, then the load, at most Max.
func Factor() float64 { return math.Min(Max, math.Max(1, Load())) }

// Busy reports whether the machine is busy now: more tasks want a core
// than there are cores, by half again.
func Busy() bool { return Load() > busyAt }

// Stretch is d as long as it must be on the machine now.
func Stretch(d time.Duration) time.Duration { return time.Duration(float64(d) * Factor()) }

// Deadline is a limit set for a quiet machine, stretched by the busiest
// the machine has been since it was set.
type Deadline struct {
	start  time.Time
	base   time.Duration
	factor *float64 // the largest factor seen
	busy   *bool    // the machine was busy at some point
}

// After sets a limit of d, as on a quiet machine, from now.
func After(d time.Duration) Deadline {
	f, b := Factor(), Busy()
	return Deadline{start: time.Now(), base: d, factor: &f, busy: &b}
}

func (d Deadline) look() {
	if f := Factor(); f > *d.factor {
		*d.factor = f
	}
	if Busy() {
		*d.busy = true
	}
}

// Passed reports whether the limit, stretched, has passed.
func (d Deadline) Passed() bool {
	d.look()
	return time.Since(d.start) > d.Limit()
}

// Limit is the limit as it stands, stretched.
func (d Deadline) Limit() time.Duration { return time.Duration(float64(d.base) * *d.factor) }

// Left is the time left before it passes (0 when it has).
func (d Deadline) Left() time.Duration {
	d.look()
	return max(0, d.Limit()-time.Since(d.start))
}

// Busy reports whether the machine was busy at any moment the deadline
// was looked at: a limit that passed then may be the machine's doing.
func (d Deadline) Busy() bool {
	d.look()
	return *d.busy
}

// Stretched says, for a message, how a limit of base was stretched, or
// "" when it was not: " (stretched to 1m0s: the machine is busy)".
func (d Deadline) Stretched() string {
	if l := d.Limit(); l > d.base+d.base/10 {
		return " (stretched to " + l.Round(time.Second).String() + ", as the machine was busy)"
	}
	return ""
}

// SetLoadForTest fixes the load per core (0 measures it again).
func SetLoadForTest(load float64) {
	once.Do(sample)
	mu.Lock()
	override = load
	mu.Unlock()
}
