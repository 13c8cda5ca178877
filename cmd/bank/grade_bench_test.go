package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// BenchmarkGrade: a whole grade as a learner runs it (every check, as many
// side by side as bank grade chooses, LOCK_TTL_MS 2000) of the lab's own
// server and of the corpus's Python server, each of which must pass. It
// reports the wall time of one grade and that time in lock TTLs (xTTL;
// the goal is at most 3). The figures are in bank help speed.
//
//	go test -run '^$' -bench BenchmarkGrade -benchtime 5x ./cmd/bank
func BenchmarkGrade(b *testing.B) {
	const ttl = 2 * time.Second
	servers := map[string][]string{"lab": {bankBinary(b), "serve"}}
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import psycopg").Run() == nil {
			script, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "grade", "python-server", "server.py"))
			servers["python"] = []string{path, script}
			break
		}
	}
	cache := pgtest.CacheDir(b)
	for _, name := range []string{"lab", "python"} {
		server, ok := servers[name]
		if !ok {
			b.Logf("no Python with psycopg: the Python server is not timed")
			continue
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				out, err := command(b, cache, append([]string{"grade", "--json", "--lock-ttl", ttl.String(), "--"}, server...)...).Output()
				var rep grade.Report
				if jerr := json.Unmarshal(out, &rep); err != nil || jerr != nil || !rep.Passed() {
					b.Fatalf("the grade did not pass (%v, %v):\n%s", err, jerr, out)
				}
			}
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(ttl), "xTTL")
		})
	}
}
