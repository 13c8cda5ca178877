package main

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/cmd/bank/internal/pace"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
	"github.com/zudojs/bank/scenarios/lab/procs"
)

// The grader is a judge, and a judge is proven on code its author did not
// write. testdata/grade holds servers written from bank grade --contract
// alone, by other hands, in Python, Go and Node.js: correct ones, which
// must pass every check, and ones with one mistake each (switched on by an
// environment variable), which must fail the checks that mistake breaks,
// naming it, and pass the rest. Some keep their keys outside PostgreSQL
// (in Redis, or in memory).
//
// In CI (BANK_REQUIRE_CORPUS, set by .ci/run) every language must be
// there; elsewhere a missing one is skipped, loudly.

func corpusDir(t *testing.T, name string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "testdata", "grade", name))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// corpusMissing skips the test, or fails it where the corpus is required.
func corpusMissing(t *testing.T, format string, args ...any) {
	t.Helper()
	why := fmt.Sprintf(format, args...)
	if os.Getenv("BANK_REQUIRE_CORPUS") != "" {
		t.Fatalf("%s, and this run requires the whole corpus (BANK_REQUIRE_CORPUS)", why)
	}
	pgtest.Skip(t, "CORPUS SERVER NOT GRADED: %s", why)
}

// python is a Python 3 that has psycopg 3 (the first python3 on PATH may
// not: Debian's python3-psycopg is for /usr/bin/python3).
func python(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(p)
		if err == nil && exec.Command(path, "-c", "import psycopg").Run() == nil {
			return path
		}
	}
	corpusMissing(t, "no python3 with psycopg 3 (install python3-psycopg)")
	return ""
}

// node is Node.js, with the npm packages of the corpus directory dir
// installed (make test runs npm ci there).
func node(t *testing.T, dir string, pkg string) string {
	t.Helper()
	path, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json"))
	}
	if err != nil {
		corpusMissing(t, "Node.js or its packages are missing in %s (%v): install nodejs and npm, then make test runs npm ci", dir, err)
	}
	return path
}

// goServer builds a Go server of the corpus (go-server unless named)
// into a temporary directory.
func goServer(t *testing.T, name ...string) string {
	t.Helper()
	dir := "go-server"
	if len(name) > 0 {
		dir = name[0]
	}
	bin := filepath.Join(t.TempDir(), "server")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = corpusDir(t, dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the Go server: %v\n%s", err, out)
	}
	return bin
}

// redis starts a Redis of the test's own on a free loopback port, with
// nothing kept on disk, and returns its URL. It dies with the test.
func redis(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		corpusMissing(t, "no redis-server (install redis-server)")
	}
	for attempt := 0; attempt < 3; attempt++ {
		free, err := procs.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		port := strconv.Itoa(free)
		spec := procs.Spec{Path: path, Args: []string{"--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no", "--dir", t.TempDir()}, Group: true}
		g, err := spec.Start(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(g.Kill)
	wait:
		for deadline := pace.After(10 * time.Second); !deadline.Passed(); time.Sleep(20 * time.Millisecond) {
			select {
			case <-g.Exited():
				break wait // the port was taken: another try
			default:
			}
			if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
				c.Close()
				return "redis://127.0.0.1:" + port
			}
		}
		g.Kill()
	}
	t.Fatal("redis-server did not start")
	return ""
}

func TestGradeCorpusCorrectServers(t *testing.T) {
	t.Parallel()
	t.Run("python", func(t *testing.T) {
		t.Parallel()
		passesEveryCheck(t, python(t), filepath.Join(corpusDir(t, "python-server"), "server.py"))
	})
	t.Run("go", func(t *testing.T) {
		t.Parallel()
		passesEveryCheck(t, goServer(t))
	})
	// The designs the lesson accepts that the grader must not mistake for
	// mistakes: the transfer in a savepoint (psycopg's nested
	// transaction), with or without a harmless write to the key's row
	// after the reply; copies that wait in the application and then replay
	// or take over (SQLAlchemy's ORM); atomic phases with a recovery point
	// (the answer written in a later transaction, rebuilt on a retry); the
	// key carried on the ledger's row (GORM).
	t.Run("python-savepoint", func(t *testing.T) {
		t.Parallel()
		passesEveryCheck(t, python(t), filepath.Join(corpusDir(t, "python-savepoint"), "server.py"))
	})
	t.Run("python-savepoint/stamp-after", func(t *testing.T) {
		t.Parallel()
		passesEveryCheck(t, "env", "STAMP_AFTER=1", python(t), filepath.Join(corpusDir(t, "python-savepoint"), "server.py"))
	})
	t.Run("python-waiting", func(t *testing.T) {
		t.Parallel()
		passesEveryCheck(t, python(t), filepath.Join(corpusDir(t, "python-waiting"), "server.py"))
	})
	t.Run("node-phases", func(t *testing.T) {
		t.Parallel()
		dir := corpusDir(t, "node-phases")
		passesEveryCheck(t, node(t, dir, "pg"), filepath.Join(dir, "server.js"))
	})
	t.Run("go-ledger", func(t *testing.T) {
		t.Parallel()
		passesEveryCheck(t, goServer(t, "go-ledger"))
	})
	t.Run("go-mistakes/none", func(t *testing.T) {
		t.Parallel()
		passesEveryCheck(t, goServer(t, "go-mistakes"))
	})
}

// mistaken is what a server with one mistake must get: the checks that
// fail, each with the mistake its evidence names ("" where none fits),
// the checks that do not apply, and the ones left out because they
// catch the mistake only when a race or a kill falls its way.
type mistaken struct {
	fail  map[string]string
	na    []string
	maybe []string
}

func TestGradeCorpusMistakes(t *testing.T) {
	t.Parallel()
	pythonModes := map[string]mistaken{
		"memory-keys": {fail: map[string]string{"crash-on-store": "second-transaction", "pause": "keys-not-shared", "restart": "memory-keys", "torture": "memory-keys"}},
		// A request slower than its lock (as under load) also shows no
		// fencing in torture; a kill between a commit and a write outside
		// the transaction shows a second transaction. Torture catches these
		// when its timing falls their way: it is not asserted for them.
		"no-fencing": {fail: map[string]string{"pause": "no-fencing"}, maybe: []string{"torture"}},
		// Killed right after its transfer's commit, it has stored the
		// answer with it: crash-on-store holds, only the expiry fails.
		"no-lock-expiry": {fail: map[string]string{"crash": "no-lock-expiry"},
			na: []string{"pause"}, maybe: []string{"torture", "outage"}},
		"second-transaction": {fail: map[string]string{"crash-on-store": "second-transaction", "pause": "no-fencing"}, maybe: []string{"torture"}},
		"replay-500":         {fail: map[string]string{"outage": "replay-500"}, maybe: []string{"torture"}},
		"unscoped-keys":      {fail: map[string]string{"other-user": "unscoped-keys", "lookup": "unscoped-keys"}},
		"no-fingerprint":     {fail: map[string]string{"other-body": "no-fingerprint"}, maybe: []string{"torture"}},
		"raw-fingerprint":    {fail: map[string]string{"reordered": "raw-fingerprint"}, maybe: []string{"torture"}},
		"check-then-insert":  {fail: map[string]string{"double-tap": "check-then-insert", "storm": "check-then-insert"}, maybe: []string{"torture"}},
		// A copy refused as if it were another request: no mistake of the
		// lesson's table, so the card says what it saw.
		"refuse-copies": {fail: map[string]string{"lost-response": "", "replayed": "", "reordered": "", "refusal": "", "pause": "", "restart": "", "torture": ""},
			maybe: []string{"storm", "double-tap", "other-body", "crash", "crash-on-store", "outage"}},
		// 417 is a refusal too: the contract takes any 4xx but 409 and 429.
		"changed-body-417": {},
	}
	for name, want := range pythonModes {
		t.Run("python/"+name, func(t *testing.T) {
			t.Parallel()
			graded(t, want, "env", "MISTAKE="+name, python(t), filepath.Join(corpusDir(t, "python-mistakes"), "server.py"))
		})
	}
	redisStores := map[string]mistaken{
		// Claimed atomically, expired and fenced in Redis, but the answer
		// is written after the transfer's commit.
		"redis-after-commit": {fail: map[string]string{"crash-on-store": "second-transaction"}, maybe: []string{"torture"}},
		// Keys outside PostgreSQL cannot be lined up: the race is only
		// sampled by double-tap, storm and torture.
		"redis-check-then-set": {fail: map[string]string{"crash-on-store": "second-transaction"}, maybe: []string{"double-tap", "storm", "torture"}},
		"memory":               {fail: map[string]string{"crash-on-store": "second-transaction", "pause": "keys-not-shared", "restart": "memory-keys", "torture": "memory-keys"}},
	}
	goModes := map[string]mistaken{
		// GET /transfers?key= answers another user's key.
		"unscoped-lookup": {fail: map[string]string{"lookup": "unscoped-keys"}},
		// A replay of {"transferId":N} alone, where the first answer had
		// the accounts and the amount.
		"partial-replay": {fail: map[string]string{"lost-response": "replay-differs", "replayed": "replay-differs", "reordered": "replay-differs",
			"restart": "replay-differs"}, maybe: []string{"torture"}},
		// A lock of 30 s whatever LOCK_TTL_MS says: the crash check waits it
		// out and names it; the copies to B never see it expire.
		"ignore-ttl": {fail: map[string]string{"crash": "lock-ttl-ignored"}, na: []string{"pause"}, maybe: []string{"torture", "outage", "crash-on-store"}},
	}
	for name, want := range goModes {
		t.Run("go-mistakes/"+name, func(t *testing.T) {
			t.Parallel()
			graded(t, want, "env", "MISTAKE="+name, goServer(t, "go-mistakes"))
		})
	}
	t.Run("go-mistakes/redis-after-commit", func(t *testing.T) {
		t.Parallel()
		// Keys in Redis, the answer written there after the transfer's
		// commit, and a harmless column of its own added to transfers.
		graded(t, mistaken{fail: map[string]string{"crash-on-store": "second-transaction"}, maybe: []string{"torture"}},
			"env", "MISTAKE=redis-after-commit", "REDIS_URL="+redis(t), goServer(t, "go-mistakes"))
	})
	for name, want := range redisStores {
		t.Run("node-redis/"+name, func(t *testing.T) {
			t.Parallel()
			dir := corpusDir(t, "node-redis")
			nodejs := node(t, dir, "redis")
			graded(t, want, "env", "STORE="+name, "REDIS_URL="+redis(t), nodejs, filepath.Join(dir, "server.js"))
		})
	}
}

// graded grades a server and checks its card against want, once, or
// BANK_CORPUS_RUNS times (the figures for a release: 20), saying how many
// runs came out as expected.
func graded(t *testing.T, want mistaken, server ...string) {
	t.Helper()
	runs, _ := strconv.Atoi(os.Getenv("BANK_CORPUS_RUNS"))
	runs = max(1, runs)
	bad, unknown := 0, 0
	var took []time.Duration
	for i := range runs {
		start := time.Now()
		rep, _, out := gradeAll(t, want.maybe, server...)
		took = append(took, time.Since(start))
		if d := deviations(rep, want); len(d) > 0 {
			bad++
			t.Errorf("run %d of %d: %s\n%s", i+1, runs, strings.Join(d, "; "), out)
		}
		if slices.Contains(slices.Collect(maps.Values(verdicts(rep))), grade.Unknown) {
			unknown++
		}
	}
	slices.Sort(took)
	t.Logf("CORPUS %s: %d of %d runs as expected, %d with a check that could not tell; median grade %.1fs (load per core at the end %.1f)",
		t.Name(), runs-bad, runs, unknown, took[len(took)/2].Seconds(), pace.Load())
}

// deviations lists how a card differs from what want says: a check's
// verdict, the mistake a failure names, a failure with no command to
// see it done right. A check that could not tell is no deviation while
// the machine is busy.
func deviations(rep grade.Report, want mistaken) []string {
	var d []string
	for check, got := range verdicts(rep) {
		wanted := grade.Pass
		_, mustFail := want.fail[check]
		switch {
		case mustFail:
			wanted = grade.Fail
		case slices.Contains(want.na, check):
			wanted = grade.NA
		}
		if got != wanted && !couldNotTell(got) {
			d = append(d, fmt.Sprintf("%s: %s, want %s", check, got, wanted))
		}
	}
	for _, r := range rep.Results {
		if r.Verdict != grade.Fail {
			continue
		}
		if mistake, ok := want.fail[r.Name]; ok && r.Mistake != mistake {
			d = append(d, fmt.Sprintf("%s fails naming the mistake %q, want %q: %s", r.Name, r.Mistake, mistake, r.Why))
		}
		if !strings.HasPrefix(r.See, "bank ") {
			d = append(d, fmt.Sprintf("%s fails without the command that shows it done right", r.Name))
		}
	}
	slices.Sort(d)
	return d
}
