package grade

import (
	"context"
	"io"
	"slices"
	"sort"
	"sync"
)

// Plan is how a grader of another program (bank grade client, bank grade
// webhook) runs its checks: Schedule runs them for it.
type Plan struct {
	Tool   string   // the command, as the progress lines say it: "grade client"
	Names  []string // the checks to run, in order
	Titles []string // and their titles
	// Slow start first, in this order; Alone run last, one at a time,
	// with no other check beside them (what they measure is timing).
	Slow, Alone  []string
	Repeat, Jobs int // runs of each check (0: 1); checks side by side (0: DefaultJobs)
	Points       map[string]int
	Progress     io.Writer // a line as each check starts, or nil
}

// Schedule runs every check of the plan Repeat times, Jobs at a time, the
// slow ones first and the alone ones last, run(i, n) running the n-th run
// of check i, and writes the card: each check's runs merged, scored. The
// first error ends the grade.
func Schedule(ctx context.Context, p Plan, run func(ctx context.Context, check, n int) (Result, error)) (Report, error) {
	repeat, jobs := max(1, p.Repeat), p.Jobs
	if jobs <= 0 {
		jobs = DefaultJobs()
	}
	type job struct{ check, n int }
	var queue, last []job
	runs := make([][]*Result, len(p.Names))
	for i, name := range p.Names {
		runs[i] = make([]*Result, repeat)
		for n := range repeat {
			if slices.Contains(p.Alone, name) {
				last = append(last, job{i, n})
			} else {
				queue = append(queue, job{i, n})
			}
		}
	}
	rank := func(j job) int {
		if i := slices.Index(p.Slow, p.Names[j.check]); i >= 0 {
			return i
		}
		return len(p.Slow)
	}
	sort.SliceStable(queue, func(a, b int) bool { return rank(queue[a]) < rank(queue[b]) })

	var mu sync.Mutex
	var firstErr error
	stopped := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return firstErr != nil || ctx.Err() != nil
	}
	do := func(j job) {
		if p.Progress != nil {
			mu.Lock()
			ProgressLine(p.Progress, p.Tool, p.Titles[j.check], j.n, repeat)
			mu.Unlock()
		}
		res, err := run(ctx, j.check, j.n)
		mu.Lock()
		defer mu.Unlock()
		if err != nil && firstErr == nil {
			firstErr = err
		}
		if err == nil {
			runs[j.check][j.n] = &res
		}
	}
	work := make(chan job)
	var wg sync.WaitGroup
	for range min(jobs, max(1, len(queue))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				do(j)
			}
		}()
	}
	for _, j := range queue {
		if stopped() {
			break
		}
		work <- j
	}
	close(work)
	wg.Wait()
	for _, j := range last {
		if stopped() {
			break
		}
		do(j)
	}

	rep := Report{NotRun: []string{}}
	for i, name := range p.Names {
		if r, ok := Merge(runs[i]); ok {
			rep.Results = append(rep.Results, r)
		} else {
			rep.NotRun = append(rep.NotRun, name)
		}
	}
	Score(&rep, p.Points)
	if firstErr != nil {
		return rep, firstErr
	}
	return rep, ctx.Err()
}
