//go:build linux

package main

import (
	"context"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/zudojs/bank/scenarios"
	"github.com/zudojs/bank/scenarios/lab/pgserver"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
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
		cache := pgtest.FreshCacheDir(b) // nothing there: initdb runs
		b.StartTimer()
		runProcess(b, cache, "scenario", "atomic")
	}
}

// BenchmarkWarmScenarioVsFloor measures, in one run and taking turns, a
// warm `bank scenario crash` (a whole bank process: start PostgreSQL,
// clone the scenario's database, run it, check, stop) and the floor: the
// same PostgreSQL on the same cluster started directly, polled until it
// accepts a connection (every millisecond), and stopped with a fast
// shutdown, with no bank code at all. Target: warm / floor at most 1.5.
// Run with: make gobench, or
//
//	go test ./cmd/bank -run '^$' -bench WarmScenarioVsFloor -benchtime 20x
func BenchmarkWarmScenarioVsFloor(b *testing.B) {
	cache := pgtest.CacheDir(b)
	runProcess(b, cache, "scenario", "crash") // warm the cache
	s, err := pgserver.Start(context.Background(), pgserver.Options{CacheDir: cache})
	if err != nil {
		b.Fatal(err)
	}
	bin, data := filepath.Join(s.Binaries.Dir, "bin", "postgres"), s.DataDir()
	s.Stop()
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			b.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
	}
	var floor, warm []time.Duration
	for b.Loop() {
		floor = append(floor, postgresAlone(b, bin, data, cred))
		t := time.Now()
		runProcess(b, cache, "scenario", "crash")
		warm = append(warm, time.Since(t))
	}
	f, w := median(floor), median(warm)
	b.ReportMetric(float64(f.Microseconds())/1000, "floor-ms")
	b.ReportMetric(float64(w.Microseconds())/1000, "warm-ms")
	b.ReportMetric(float64(w)/float64(f), "warm/floor")
}

// postgresAlone starts postgres directly on data, waits until it accepts
// a connection, and stops it with a fast shutdown (SIGINT).
func postgresAlone(b *testing.B, bin, data string, cred *syscall.Credential) time.Duration {
	sock := filepath.Dir(data)
	start := time.Now()
	cmd := exec.Command(bin, "-D", data, "-c", "listen_addresses=", "-c", "unix_socket_directories="+sock,
		"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "shared_buffers=32MB", "-c", "wal_level=minimal", "-c", "max_wal_senders=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGINT}
	cmd.Dir = "/"
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		c, err := pgconn.Connect(ctx, "host="+sock+" port=5432 user=postgres dbname=postgres")
		if err == nil {
			c.Close(ctx)
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			b.Fatalf("postgres alone did not start: %v", err)
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	return time.Since(start)
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
