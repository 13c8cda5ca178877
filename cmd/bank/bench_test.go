//go:build linux

package main

import (
	"syscall"
	"testing"

	"github.com/zudojs/bank/bank/pgserver/pgtest"
	"github.com/zudojs/bank/scenarios"
)

// The lab's speed goals, measured on whole bank processes as a learner
// runs them: wall time per run (ns/op) and peak resident memory of the
// bank process (peak-MiB). Run with: make bench, or
//   go test ./cmd/bank -run '^$' -bench . -benchtime 10x

func runProcess(b *testing.B, cache string, args ...string) float64 {
	b.Helper()
	cmd := command(b, cache, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%v: %v\n%s", args, err, out)
	}
	return float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024 // KiB on Linux
}

// BenchmarkScenarioWarm: `bank scenario NAME` with the cluster already
// initialized (every run after the first). Target: under 0.5 s each.
func BenchmarkScenarioWarm(b *testing.B) {
	cache := pgtest.CacheDir(b)
	runProcess(b, cache, "scenario", "atomic") // warm the cache
	for _, sc := range scenarios.All {
		b.Run(sc.Name, func(b *testing.B) {
			var peak float64
			for b.Loop() {
				peak = max(peak, runProcess(b, cache, "scenario", sc.Name))
			}
			b.ReportMetric(peak, "peak-MiB")
		})
	}
}

// BenchmarkScenarioAllWarm: `bank scenario all`. Target: under 2 s.
func BenchmarkScenarioAllWarm(b *testing.B) {
	cache := pgtest.CacheDir(b)
	runProcess(b, cache, "scenario", "atomic")
	var peak float64
	for b.Loop() {
		peak = max(peak, runProcess(b, cache, "scenario", "all"))
	}
	b.ReportMetric(peak, "peak-MiB")
}

// BenchmarkColdStart: the first run on a machine, with PostgreSQL
// installed but no cluster yet (initdb included, no download). Target:
// under 3 s.
func BenchmarkColdStart(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		cache := pgtest.CacheDir(b)
		b.StartTimer()
		runProcess(b, cache, "scenario", "atomic")
	}
}
