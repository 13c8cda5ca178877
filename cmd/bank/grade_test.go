package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/cmd/bank/internal/pace"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// garbageRole makes the test binary a server that answers every request
// with a 200 and a line of text: a server that does not speak the contract.
const garbageRole = "BANK_TEST_GARBAGE_SERVER"

func garbageServer() {
	http.ListenAndServe("127.0.0.1:"+os.Getenv("PORT"), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "hello from a server that never read the contract")
	}))
	os.Exit(1)
}

// draftOnlyRole makes the test binary a correct server (the lab's API)
// that takes its key only as the IETF draft writes it, a quoted string,
// and refuses a bare one with 400 and problem details of its own, which
// carry no "error" member: a server written from the draft, not from the
// lesson.
const draftOnlyRole = "BANK_TEST_DRAFT_ONLY_SERVER"

func draftOnlyServer() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err == nil {
		err = idem.EnsureSchema(ctx, pool)
	}
	ms, _ := strconv.Atoi(os.Getenv("LOCK_TTL_MS"))
	if err != nil || ms <= 0 {
		fmt.Fprintln(os.Stderr, "draft-only server:", err, os.Getenv("LOCK_TTL_MS"))
		os.Exit(1)
	}
	srv := &api.Server{
		Transfers: &api.Transfers{DB: pool, Keys: &idem.Store{LockTTL: time.Duration(ms) * time.Millisecond}},
		DB:        pool, Keys: pool, Tokens: api.Tokens, Now: time.Now,
	}
	err = http.ListenAndServe("127.0.0.1:"+os.Getenv("PORT"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if key := r.Header.Get("Idempotency-Key"); key != "" && !strings.HasPrefix(key, `"`) {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"type":"about:blank","title":"Idempotency-Key must be a Structured Field String (draft-ietf-httpapi-idempotency-key-header, section 2.1)","status":400}`)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	fmt.Fprintln(os.Stderr, "draft-only server:", err)
	os.Exit(1)
}

// TestGradeDraftOnlyServerPasses: a server that takes only the draft's
// quoted key, and answers in problem details alone, is graded as fairly
// as the lesson's: the grader finds that it refuses bare keys, sends
// them quoted (torture's client too), and every check passes.
func TestGradeDraftOnlyServerPasses(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rep, failed, out := gradeAll(t, nil, "env", draftOnlyRole+"=1", self)
	if failed {
		t.Errorf("a check failed:\n%s", out)
	}
	for _, r := range rep.Results {
		if r.Verdict != grade.Pass {
			t.Errorf("%s: %s: %s\n%s", r.Name, r.Verdict, r.Why, strings.Join(r.Evidence, "\n"))
		}
	}
	if !strings.Contains(out, "the grader sends every key quoted from here on") || !strings.Contains(out, `key \"grade-plain-0000001\"`) {
		t.Errorf("the report does not say the keys went quoted:\n%s", out)
	}
}

// graders bounds how many bank grade runs the tests make at once, and
// testJobs how many checks each runs side by side: each check starts
// servers on a database of its own, and a dozen at once on two cores
// starve every other test of the run (and the lock-timed checks
// themselves).
var graders = make(chan struct{}, 3)

const testJobs = "2"

// gradeTTL runs bank grade --json on a server command, with --only
// checks (all of them if ""), the servers' LOCK_TTL_MS given, testJobs
// checks at a time. extra flags go before the command.
func gradeTTL(t *testing.T, ttl, checks string, server ...string) (grade.Report, int, string) {
	t.Helper()
	return gradeWith(t, []string{"--lock-ttl", ttl, "--jobs", testJobs}, checks, server...)
}

func gradeWith(t *testing.T, flags []string, checks string, server ...string) (grade.Report, int, string) {
	t.Helper()
	graders <- struct{}{}
	defer func() { <-graders }()
	args := append([]string{"grade", "--json"}, flags...)
	if checks != "" {
		args = append(args, "--only", checks)
	}
	args = append(append(args, "--"), server...)
	cmd := command(t, pgtest.CacheDir(t), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var rep grade.Report
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		t.Fatalf("grade %v printed no report (%v, exit %d): %s\n%s", server, jerr, exitOf(err), out, stderr.String())
	}
	matchesShape(t, "bank.grade/v1", out)
	return rep, exitOf(err), string(out)
}

// gradeAll grades a server on every check but skip's, side by side, with
// a 2 s lock (the faults timed against it, such as pause's copy reaching
// server B before A's lock expires, need it on a machine as loaded as
// make test's). It returns the results, whether the grade failed (exit 1)
// as it may, and the output; any other exit fails the test.
func gradeAll(t *testing.T, skip []string, server ...string) (grade.Report, bool, string) {
	t.Helper()
	var checks []string
	for _, c := range grade.Checks {
		if !slices.Contains(skip, c.Name) {
			checks = append(checks, c.Name)
		}
	}
	rep, code, out := gradeTTL(t, "2s", strings.Join(checks, ","), server...)
	failed := code == exitcode.No && rep.Verdict == grade.Fail
	unknown := code == exitcode.Unknown && rep.Verdict == grade.Unknown && couldNotTell(grade.Unknown)
	if !failed && !unknown && (code != exitcode.OK || !rep.Passed()) {
		t.Errorf("exit %d, verdict %s:\n%s", code, rep.Verdict, out)
	}
	if len(rep.Results) != len(checks) {
		t.Fatalf("%d results for %d checks:\n%s", len(rep.Results), len(checks), out)
	}
	return rep, failed, out
}

func verdicts(rep grade.Report) map[string]string {
	v := map[string]string{}
	for _, r := range rep.Results {
		v[r.Name] = r.Verdict
	}
	return v
}

// passesEveryCheck grades a server that must pass every check (graded,
// with nothing to fail).
func passesEveryCheck(t *testing.T, server ...string) {
	t.Helper()
	graded(t, mistaken{}, server...)
}

// couldNotTell reports whether verdict is a judge's "unknown" on a machine
// busy enough to excuse it (package pace): a test accepts it there, and
// nowhere else, for a check that must pass or fail.
func couldNotTell(verdict string) bool {
	return verdict == grade.Unknown && pace.Busy()
}

// TestGradeLabServerPasses: the lab's own server, graded as a learner's
// would be, holds on every check.
func TestGradeLabServerPasses(t *testing.T) {
	t.Parallel()
	// As a learner runs it: every check, as many side by side as bank
	// grade chooses, the default lock.
	rep, code, out := gradeWith(t, nil, "", bankBinary(t), "serve")
	if code != exitcode.OK || !rep.Passed() || len(rep.Results) != len(grade.Checks) || rep.Points != len(grade.Checks) || rep.MaxPoints != len(grade.Checks) {
		t.Fatalf("exit %d, passed %v, %d results, points %d of %d:\n%s", code, rep.Passed(), len(rep.Results), rep.Points, rep.MaxPoints, out)
	}
	for _, r := range rep.Results {
		if r.Verdict != grade.Pass || r.Runs != 1 || r.FailedRuns != 0 {
			t.Errorf("%s: %s (runs %d, failed %d): %s", r.Name, r.Verdict, r.Runs, r.FailedRuns, r.Why)
		}
	}
}

// TestGradeRepeatJUnitAndPoints: --repeat runs each check that many times
// and says how many failed; --junit writes a file CI parses, with one
// testcase per check, the failure and the n/a as the card has them;
// --points weighs the checks in both.
func TestGradeRepeatJUnitAndPoints(t *testing.T) {
	t.Parallel()
	junit := filepath.Join(t.TempDir(), "grade.xml")
	rep, code, out := gradeWith(t, []string{"--lock-ttl", "2s", "--jobs", testJobs, "--repeat", "2", "--junit", junit, "--points", "crash=5,plain=2"},
		"plain,crash,pause", bankBinary(t), "serve", "--mistake", "no-lock-expiry")
	if code != exitcode.No || rep.Passed() {
		t.Fatalf("exit %d, passed %v, want a failed grade:\n%s", code, rep.Passed(), out)
	}
	want := map[string][3]int{"plain": {2, 0, 2}, "crash": {2, 2, 0}, "pause": {2, 0, 0}} // runs, failed, points
	for _, r := range rep.Results {
		w := want[r.Name]
		if r.Runs != w[0] || r.FailedRuns != w[1] || r.Points != w[2] {
			t.Errorf("%s: runs %d, failed %d, points %d; want %v: %s", r.Name, r.Runs, r.FailedRuns, r.Points, w, r.Why)
		}
	}
	if rep.Points != 2 || rep.MaxPoints != 7 {
		t.Errorf("points %d of %d, want 2 of 7 (pause n/a counts on neither side)", rep.Points, rep.MaxPoints)
	}
	if r := rep.Results[1]; r.Verdict != grade.Fail || !strings.HasPrefix(r.Why, "failed 2 of 2 runs; the first that failed: ") || r.Mistake != "no-lock-expiry" {
		t.Errorf("crash: %s %q (%s)", r.Verdict, r.Why, r.Mistake)
	}
	raw, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Skipped  int `xml:"skipped,attr"`
		Cases    []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
			} `xml:"failure"`
			Skipped *struct{} `xml:"skipped"`
		} `xml:"testcase"`
	}
	if err := xml.Unmarshal(raw, &suite); err != nil {
		t.Fatalf("the JUnit file does not parse: %v\n%s", err, raw)
	}
	if suite.Tests != 3 || len(suite.Cases) != 3 || suite.Failures != 1 || suite.Skipped != 1 {
		t.Fatalf("JUnit: %d tests (%d cases), %d failures, %d skipped; want 3, 1, 1:\n%s", suite.Tests, len(suite.Cases), suite.Failures, suite.Skipped, raw)
	}
	if c := suite.Cases[1]; !strings.HasPrefix(c.Name, "crash: ") || c.Failure == nil || c.Failure.Type != "no-lock-expiry" || c.Failure.Message != rep.Results[1].Why {
		t.Errorf("JUnit's crash case: %+v", c)
	}
	if c := suite.Cases[2]; !strings.HasPrefix(c.Name, "pause: ") || c.Skipped == nil {
		t.Errorf("JUnit's pause case is not skipped: %+v", c)
	}
}

// TestGradeNodeServerPasses: a server in another language, the lesson's
// API written in Node.js (testdata/grade/node-server), passes every
// check: the grader asks nothing of a server that only the lab's own Go
// server would do. make test installs its one package (pg) with npm ci;
// in CI (BANK_REQUIRE_NODE, set by .ci/run) a missing Node.js or package
// fails the test, elsewhere it says so, loudly.
func TestGradeNodeServerPasses(t *testing.T) {
	t.Parallel()
	dir, err := filepath.Abs(filepath.Join("..", "..", "testdata", "grade", "node-server"))
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "pg", "package.json"))
	}
	if err != nil {
		if os.Getenv("BANK_REQUIRE_NODE") != "" {
			t.Fatalf("the Node.js server cannot run, and this run requires it (%v): install nodejs and npm, then make test (it runs npm ci)", err)
		}
		pgtest.Skip(t, "NODE.JS SERVER NOT GRADED (%v): install nodejs and npm, then make test runs npm ci in %s", err, dir)
	}
	passesEveryCheck(t, node, filepath.Join(dir, "server.js"))
}

// TestGradeCatchesEachBreak: each of bank serve's mistakes fails exactly
// the checks its mistake should fail, and passes the rest.
func TestGradeCatchesEachBreak(t *testing.T) {
	t.Parallel()
	// fail: each check that must fail, and the lesson's mistake its
	// evidence must name ("" where it fits none).
	cases := map[string]mistaken{
		// No key at all: every check that sends a copy sees it run again.
		"no-keys": {fail: map[string]string{"lost-response": "no-keys", "replayed": "no-keys", "reordered": "no-keys", "other-body": "no-keys",
			"no-key": "key-optional", "refusal": "refusal-not-stored", "double-tap": "no-keys", "storm": "no-keys", "crash-on-store": "second-transaction",
			"pause": "keys-not-shared", "restart": "no-keys", "lookup": "no-lookup", "torture": "no-keys"}},
		// Keys in memory: each process has its own, and a restart has none;
		// the answer is stored nowhere the transfer's transaction reaches.
		"memory-keys": {fail: map[string]string{"pause": "keys-not-shared", "restart": "memory-keys", "lookup": "no-lookup", "torture": "memory-keys",
			"crash-on-store": "second-transaction"}},
		"no-fencing": {fail: map[string]string{"pause": "no-fencing"}},
		// Without expiry the pause has no takeover to fence, and a key whose
		// request failed or died is stuck. Torture fails only if its kill
		// lands inside a request whose key is not yet done.
		"no-lock-expiry": {fail: map[string]string{"crash": "no-lock-expiry", "outage": "no-lock-expiry"},
			na: []string{"pause"}, maybe: []string{"torture"}},
		// The transfer commits before its answer is stored: a kill between
		// the two (torture's, if it lands there) makes the retry run it
		// again; its fencing comes after the transfer has committed.
		"second-transaction": {fail: map[string]string{"crash-on-store": "second-transaction", "pause": "no-fencing"}, maybe: []string{"torture"}},
		// Only an unexpected error is stored; torture's faults cause none,
		// unless one comes of the load itself.
		"replay-500": {fail: map[string]string{"outage": "replay-500"}, maybe: []string{"torture"}},
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			graded(t, want, bankBinary(t), "serve", "--mistake", name)
		})
	}
}

// TestGradeServersThatCannotBeGraded: a server that exits at once or
// never listens is an environment failure (exit 3) that shows what the
// server said; one that answers garbage fails its checks (exit 1).
func TestGradeServersThatCannotBeGraded(t *testing.T) {
	t.Parallel()
	cache := pgtest.CacheDir(t)
	run := func(args ...string) (string, string, int) {
		cmd := command(t, cache, append([]string{"grade", "--only", "plain,no-key"}, args...)...)
		cmd.Env = append(cmd.Env, garbageRole+"=1")
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), exitOf(err)
	}
	t.Run("exits", func(t *testing.T) {
		_, stderr, code := run("--", "sh", "-c", "echo cannot find module pg >&2; exit 1")
		if code != exitcode.Env || !strings.Contains(stderr, "the server exited (exit status 1) before it listened on its PORT") || !strings.Contains(stderr, "cannot find module pg") {
			t.Errorf("exit %d:\n%s", code, stderr)
		}
	})
	t.Run("never listens", func(t *testing.T) {
		_, stderr, code := run("--start-timeout", "500ms", "--", "sh", "-c", "echo starting >&2; exec sleep 30")
		if code != exitcode.Env || !strings.Contains(stderr, "did not listen on 127.0.0.1:$PORT within 500ms") || !strings.Contains(stderr, "starting") {
			t.Errorf("exit %d:\n%s", code, stderr)
		}
	})
	t.Run("garbage", func(t *testing.T) {
		// Only this process has the role in its environment: the grader
		// passes it on to the server it starts.
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		out, stderr, code := run("--", self)
		if code != exitcode.No || !strings.Contains(out, "FAIL     plain") || !strings.Contains(out, "a valid transfer got 200, not 201") || !strings.Contains(out, "FAIL     no-key") {
			t.Errorf("exit %d:\n%s\n%s", code, out, stderr)
		}
	})
}

func TestGradeUsage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"grade"}, "name your server's command after --"},
		{[]string{"grade", "node", "server.js"}, "name your server's command after --"},
		{[]string{"grade", "--only", "crsh", "--", "true"}, `unknown check "crsh" (did you mean crash?) in --only`},
		{[]string{"grade", "--lock-ttl", "0s", "--", "true"}, "--lock-ttl must be between"},
		{[]string{"grade", "--repeat", "0", "--", "true"}, "--repeat must be between 1 and 1000, such as 20"},
		{[]string{"grade", "--workflow", "clasroom", "--", "node", "server.js"}, `no workflow "clasroom" (did you mean classroom?): choose actions or classroom`},
		{[]string{"grade", "--workflow", "classroom"}, "name your server's command after --"},
		{[]string{"grade", "--starter", "rust", "dir"}, `no starter in "rust"; choose one of go, node, python`},
		{[]string{"grade", "--starter", "pyhton", "dir"}, `no starter in "pyhton" (did you mean python?)`},
		{[]string{"grade", "--starter", "go"}, "--starter go needs one folder to write into, such as: bank grade --starter go my-server"},
		{[]string{"grade", "--starter", "go", "dir", "--", "./server"}, "--starter writes a server and grades nothing"},
		{[]string{"grade", "--jobs", "-1", "--", "true"}, "--jobs must be between 1 and 64"},
		{[]string{"grade", "--points", "crash", "--", "true"}, `--points takes NAME=N with N a whole number from 0 to 1000, such as crash=5: got "crash"`},
		{[]string{"grade", "--points", "crsh=2", "--", "true"}, `unknown check "crsh" (did you mean crash?) in --points`},
		{[]string{"grade", "--junit", "/dev/null", "--", "true"}, "--junit /dev/null is a device: name a new file or a regular one, such as grade.xml, or - for standard output"},
		{[]string{"grade", "--contract", "--", "node", "server.js"}, `--contract prints the contract and runs nothing; drop it to grade "node server.js"`},
	} {
		r := cli(t, nil, c.args...)
		if r.code != exitcode.Usage || !strings.Contains(r.stderr, c.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", c.args, r.code, r.stderr, c.want)
		}
	}
	// A server that cannot be started is the environment's failure, as
	// for bank exercise's program.
	if r := cli(t, nil, "grade", "--", "no-such-server-command"); r.code != exitcode.Env || !strings.Contains(r.stderr, `cannot run "no-such-server-command": executable file not found in $PATH; check the command after --`) {
		t.Errorf("a missing server command: exit %d, %q; want exit 3 and why", r.code, r.stderr)
	}
	r := cli(t, nil, "grade", "--contract")
	for _, want := range append([]string{"DATABASE_URL", "PORT", "LOCK_TTL_MS", "Idempotent-Replayed: true", "Retry-After"}, grade.Names()...) {
		if r.code != exitcode.OK || !strings.Contains(r.stdout, want) {
			t.Errorf("--contract lacks %q (exit %d)", want, r.code)
		}
	}
}

// TestGradeStarterCommand: --starter writes the files into a new folder
// and says what to run next there; a second time it writes nothing over
// them (exit 2, the files unchanged).
func TestGradeStarterCommand(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "my-server")
	r := cli(t, nil, "grade", "--starter", "python", dir)
	if r.code != exitcode.OK || !strings.Contains(r.stdout, "wrote the python starter into "+dir+":\n  README.md\n  server.py\n") ||
		!strings.Contains(r.stdout, "bank grade -- python3 server.py") {
		t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	os.WriteFile(filepath.Join(dir, "server.py"), []byte("# mine\n"), 0o644)
	r = cli(t, nil, "grade", "--starter", "python", dir)
	if r.code != exitcode.Usage || !strings.Contains(r.stderr, "already there") {
		t.Fatalf("a second --starter: exit %d: %s", r.code, r.stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "server.py")); string(got) != "# mine\n" {
		t.Fatalf("the learner's server.py was written over: %q", got)
	}
}
