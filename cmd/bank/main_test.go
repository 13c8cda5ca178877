package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/scenarios"
	"github.com/zudojs/bank/scenarios/lab/mistakes"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

func TestMain(m *testing.M) {
	if os.Getenv(garbageRole) != "" {
		garbageServer() // this process is a server bank grade is grading
	}
	if os.Getenv(draftOnlyRole) != "" {
		draftOnlyServer() // so is this one
	}
	// The corpus, the solutions and the lesson's files in testdata are
	// run or read by other programs: see pgtest.Inputs.
	if err := pgtest.Inputs(filepath.Join("..", "..", "testdata")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := pgtest.Run(m, labTemplate())
	removeBinary() // the bank the tests built, if they built one
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// cli runs the CLI in-process, through its front door, against the test
// server unless env says otherwise.
func cli(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "DATABASE_URL" {
			return pgtest.AdminURL()
		}
		return ""
	}
	code := run(context.Background(), args, stdio{In: strings.NewReader(""), Out: &out, Err: &errb}, getenv)
	return result{code, out.String(), errb.String()}
}

func oneLine(t *testing.T, r result) {
	t.Helper()
	if strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "bank: ") {
		t.Errorf("want one line on stderr starting with 'bank: ', got %q", r.stderr)
	}
}

func TestHelpAndVersion(t *testing.T) {
	t.Parallel()
	r := cli(t, nil, "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "scenario") || !strings.Contains(r.stdout, "--database-url") {
		t.Fatalf("--help: %+v", r)
	}
	r = cli(t, nil, "--version")
	if r.code != 0 || !strings.Contains(r.stdout, version) {
		t.Fatalf("--version: %+v", r)
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"nosuch"}, `unknown command "nosuch"`},
		{[]string{"--bogus"}, "unknown flag: --bogus"},
		{[]string{"scenario"}, "name one scenario"},
		{[]string{"scenario", "nosuch"}, strings.Join(scenarios.Names(), ", ")},
		{[]string{"scenario", "naive", "extra"}, `one scenario at a time: got "naive extra"`},
		{[]string{"help", "nosuch"}, `no help for "nosuch"`},
		{[]string{"help", "scenari"}, "(did you mean scenario?)"},
		{[]string{"--versoin"}, "unknown flag: --versoin (did you mean --version?) (see bank --help)"},
		{[]string{"scenario", "crsh"}, `unknown scenario "crsh" (did you mean crash?)`},
		{[]string{"mistake", "no-fence"}, "(did you mean no-fencing?)"},
		{[]string{"mistak", "all"}, `unknown command "mistak" (did you mean mistake?)`},
		{[]string{"scenario", "naive", "--color=sometimes"}, "--color must be auto, always or never"},
		{[]string{"scenario", "all", "--keep"}, "--keep works with one scenario"},
		{[]string{"--pg-port", "x", "scenario", "naive"}, `--pg-port takes a whole number, not "x"`},
		// A bad number in the lab's words, not Go's strconv's.
		{[]string{"quiz", "--seed", "-1"}, `--seed takes a whole number, 0 or more, not "-1" (see bank quiz --help)`},
		{[]string{"quiz", "--seed", "99999999999999999999"}, "--seed takes a whole number, 0 or more; 99999999999999999999 is out of range"},
		{[]string{"grade", "--lock-ttl", "5x", "--", "x"}, `--lock-ttl takes a duration such as 500ms, 2s or 1m, not "5x"`},
		{[]string{"bench", "--rounds", "0"}, "--rounds must be at least 1"},
		{[]string{"bench", "--duration", "300ms", "--rounds", "5"}, "use --duration 500ms or more, or fewer --rounds"},
		{[]string{"bench", "--clients", "0"}, "--clients must be at least 1"},
		// The demo tokens are public: only loopback, unless the risk is named.
		{[]string{"serve", "--addr", "0.0.0.0:0"}, "not a loopback address: the demo tokens (token-ada, …) are public"},
		{[]string{"serve", "--addr", "[::]:0"}, "say --expose-with-public-tokens"},
	} {
		r := cli(t, nil, c.args...)
		if r.code != exitcode.Usage || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stderr, "strconv") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, r.code, r.stderr, c.want)
		}
		oneLine(t, r)
		if r.stdout != "" {
			t.Errorf("%v printed to stdout: %q", c.args, r.stdout)
		}
	}
}

// TestHelpListsTheNames: bank scenario --help and bank mistake --help
// list every name with its summary.
func TestHelpListsTheNames(t *testing.T) {
	t.Parallel()
	r := cli(t, nil, "scenario", "--help")
	for _, sc := range scenarios.All {
		if !strings.Contains(r.stdout, "  "+sc.Name+" ") || !strings.Contains(r.stdout, sc.Summary) {
			t.Errorf("scenario --help lacks %s", sc.Name)
		}
	}
	r = cli(t, nil, "mistake", "--help")
	for _, m := range scenarios.Mistakes {
		if !strings.Contains(r.stdout, "  "+m.Name+" ") {
			t.Errorf("mistake --help lacks %s", m.Name)
		}
	}
}

// TestPredictWithoutATerminal: --predict in a pipe says so once and the
// transcript is the golden one.
func TestPredictWithoutATerminal(t *testing.T) {
	t.Parallel()
	r := cli(t, nil, "scenario", "crash", "--predict")
	want, _ := os.ReadFile("../../testdata/scenarios/crash.golden")
	if r.code != 0 || r.stdout != string(want) || strings.Count(r.stderr, "--predict asks on a terminal") != 1 {
		t.Fatalf("exit %d, stderr %q\n%s", r.code, r.stderr, r.stdout)
	}
	if r := cli(t, nil, "scenario", "all", "--predict"); r.code != exitcode.Usage {
		t.Errorf("--predict with all: exit %d", r.code)
	}
}

// TestStepWithoutATerminal: --step in a pipe says once that it runs
// straight through, and the transcript is unchanged.
func TestStepWithoutATerminal(t *testing.T) {
	t.Parallel()
	r := cli(t, nil, "scenario", "naive", "--step")
	if r.code != 0 || strings.Count(r.stderr, "running straight through") != 1 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestScenarioList(t *testing.T) {
	t.Parallel()
	r := cli(t, nil, "scenario", "list")
	var lines []string // a summary too long for 80 columns goes on under itself
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if utf8.RuneCountInString(l) > 80 {
			t.Errorf("a line of %d columns: %q", utf8.RuneCountInString(l), l)
		}
		if !strings.HasPrefix(l, " ") {
			lines = append(lines, l)
		}
	}
	if r.code != 0 || len(lines) != len(scenarios.All) {
		t.Fatalf("%+v", r)
	}
	for i, sc := range scenarios.All {
		if !strings.HasPrefix(lines[i], sc.Name+" ") {
			t.Errorf("line %d is %q, want %s first", i, lines[i], sc.Name)
		}
	}
}

func TestScenarioMatchesGoldenAndHasNoColorInAPipe(t *testing.T) {
	t.Parallel()
	r := cli(t, nil, "scenario", "naive", "--step")
	want, err := os.ReadFile("../../testdata/scenarios/naive.golden")
	if err != nil {
		t.Fatal(err)
	}
	if r.code != 0 || r.stdout != string(want) {
		t.Fatalf("exit %d\n%s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "\x1b[") || strings.Contains(r.stdout, "[Enter]") {
		t.Fatal("escape codes or a step prompt in a pipe")
	}
}

func TestColour(t *testing.T) {
	t.Parallel()
	always := cli(t, map[string]string{"NO_COLOR": "1"}, "scenario", "atomic", "--color=always")
	if always.code != 0 || !strings.Contains(always.stdout, "\x1b[") {
		t.Fatalf("--color=always should colour even with NO_COLOR: %q", always.stdout)
	}
	never := cli(t, nil, "scenario", "atomic", "--color=always", "--no-color")
	if never.code != 0 || strings.Contains(never.stdout, "\x1b[") {
		t.Fatalf("--no-color left colour: %q", never.stdout)
	}
}

func TestExplainAddsNotesOnly(t *testing.T) {
	t.Parallel()
	plain := cli(t, nil, "scenario", "lost-response")
	explained := cli(t, nil, "scenario", "lost-response", "--explain")
	if explained.code != 0 || !strings.Contains(explained.stdout, "» retry after a lost response") || !strings.Contains(explained.stdout, "lost in tunnel") {
		t.Fatalf("%s", explained.stdout)
	}
	for _, line := range strings.Split(plain.stdout, "\n") {
		if !strings.Contains(explained.stdout, line) {
			t.Errorf("--explain lost the line %q", line)
		}
	}
}

func TestJSON(t *testing.T) {
	t.Parallel()
	r := cli(t, nil, "scenario", "retry-safe", "--json")
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	matchesShape(t, "bank.events/v1", []byte(r.stdout))
	var types, arrows []string
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	var last map[string]any
	for sc.Scan() {
		last = nil
		if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
			t.Fatalf("not JSON: %q", sc.Text())
		}
		if last["kind"] == "message" {
			arrows = append(arrows, fmt.Sprintf("%v>%v %v", last["from"], last["to"], last["mark"]))
			if len(types) == 0 || types[len(types)-1] != "message" {
				types = append(types, "message")
			}
			continue
		}
		types = append(types, last["kind"].(string))
	}
	// Two lines set the story up (the tap, what a key and the key store
	// are) before its step; the reply's body is followed by a line that
	// says how it is printed.
	if got := strings.Join(types, " "); got != "scenario line line step message line message response line balances verdict" {
		t.Fatalf("event types %q", got)
	}
	// The diagram's messages: the first answer lost after the commit, the
	// retry replayed.
	if got := strings.Join(arrows, ", "); got != "app>server <nil>, server>PostgreSQL <nil>, server>PostgreSQL <nil>, server>app lost, app>server <nil>, server>PostgreSQL replayed, server>app replayed" {
		t.Fatalf("messages %q", got)
	}
	if last["verdict"] != "pass" {
		t.Fatalf("verdict %v", last)
	}
}

// jsonLines parses one JSON object per line, and fails the test on any
// other line.
func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var o map[string]any
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatalf("not one JSON object: %q", l)
		}
		objs = append(objs, o)
	}
	return objs
}

// TestJSONRunsEndWithOneSummary: scenario all and mistake all --json end
// with one summary object naming every run; one mistake --json is its two
// halves' runs, then the mistake's own verdict.
func TestJSONRunsEndWithOneSummary(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args  []string
		field string
		names []string
	}{
		{[]string{"scenario", "all", "--json"}, "scenarios", lessonNames()},
		{[]string{"mistake", "all", "--json"}, "mistakes", scenarios.MistakeNames()},
	} {
		// As a process of its own: memory-keys starts bank serve.
		cmd := command(t, pgtest.CacheDir(t), c.args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v: %s", c.args, err, stderr.String())
		}
		matchesShape(t, "bank.events/v1", out)
		objs := jsonLines(t, string(out))
		last := objs[len(objs)-1]
		rows, _ := last[c.field].([]any)
		if last["kind"] != "summary" || len(rows) != len(c.names) {
			t.Fatalf("%v: the last line is not a summary of %d runs: %v", c.args, len(c.names), last)
		}
		for i, row := range rows {
			row := row.(map[string]any)
			if row[strings.TrimSuffix(c.field, "s")] != c.names[i] || row["verdict"] != "pass" {
				t.Errorf("%v: summary row %d is %v, want %s, pass", c.args, i, row, c.names[i])
			}
		}
		for _, o := range objs[:len(objs)-1] {
			if o["kind"] == "summary" || o["kind"] == nil || o["scenario"] == nil {
				t.Errorf("%v: a line before the summary has no kind or scenario: %v", c.args, o)
			}
		}
	}
	r := cli(t, nil, "mistake", "no-fingerprint", "--json")
	var kinds []string
	for _, o := range jsonLines(t, r.stdout) {
		if k := o["kind"].(string); k == "scenario" || k == "verdict" || k == "mistake" {
			kinds = append(kinds, fmt.Sprint(k, " ", o["scenario"]))
		}
	}
	want := "scenario no-fingerprint, broken|verdict no-fingerprint, broken|scenario no-fingerprint, fixed|verdict no-fingerprint, fixed|mistake no-fingerprint"
	if got := strings.Join(kinds, "|"); r.code != 0 || got != want {
		t.Errorf("mistake --json: exit %d, runs %q, want %q", r.code, got, want)
	}
}

// lessonNames are the scenarios bank scenario all runs.
func lessonNames() []string {
	var names []string
	for _, sc := range scenarios.Lessons {
		names = append(names, sc.Name)
	}
	return names
}

func TestAllEndsWithAVerdictPerScenario(t *testing.T) {
	t.Parallel()
	r := cli(t, nil, "scenario", "all")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	table := r.stdout[strings.LastIndex(r.stdout, fmt.Sprintf("\n%-*s %-18s ", nameWidth(), "scenario", "verdict")):]
	for _, sc := range scenarios.Lessons {
		want := "invariants held"
		if len(sc.ShowsBroken) > 0 || sc.Fix != "" {
			want = "failure reproduced"
		}
		if !strings.Contains(table, fmt.Sprintf("\n%-*s %-18s ", nameWidth(), sc.Name, want)) {
			t.Errorf("%s: no %q row in the table:\n%s", sc.Name, want, table)
		}
	}
	// The exercises' solutions are not run (should-retry's would print
	// the exercise's answers): the table's end says where they are.
	for _, sc := range scenarios.Solutions {
		if strings.Contains(r.stdout, "== "+sc.Name+":") || strings.Contains(table, "\n"+sc.Name+" ") {
			t.Errorf("scenario all ran %s, an exercise's solution", sc.Name)
		}
	}
	if !strings.Contains(table, "Try them first: bank exercise list") {
		t.Errorf("the table does not say where the exercises are:\n%s", table)
	}
}

func TestUnreachableDatabase(t *testing.T) {
	t.Parallel()
	r := cli(t, map[string]string{"DATABASE_URL": "postgres://nobody@127.0.0.1:1/x?connect_timeout=5"}, "scenario", "naive")
	if r.code != exitcode.Env || !strings.Contains(r.stderr, "cannot reach PostgreSQL at 127.0.0.1:1") {
		t.Fatalf("exit %d, %q", r.code, r.stderr)
	}
	oneLine(t, r)
}

func TestBadPGBinaries(t *testing.T) {
	t.Parallel()
	r := cli(t, map[string]string{"DATABASE_URL": ""}, "--pg-binaries", "/nonexistent", "scenario", "naive")
	if r.code != exitcode.Env || !strings.Contains(r.stderr, "--pg-binaries /nonexistent") {
		t.Fatalf("exit %d, %q", r.code, r.stderr)
	}
	oneLine(t, r)
}

// --- real processes ---

var buildOnce sync.Once
var binary string
var removeBinary = func() {}

func bankBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		var err error
		if binary, removeBinary, err = pgtest.BuildBank("."); err != nil { // kept for the whole test binary, removed by TestMain
			removeBinary = func() {}
			t.Fatal(err)
		}
	})
	return binary
}

func command(t testing.TB, cache string, args ...string) *exec.Cmd {
	cmd := exec.Command(bankBinary(t), args...)
	// The grades bank grade keeps for bank grade hops go to a folder of
	// the test's, never the machine's own state folder.
	cmd.Env = append(os.Environ(), "BANK_CACHE_DIR="+cache, "DATABASE_URL=", "XDG_STATE_HOME="+t.TempDir())
	return cmd
}

func TestTwoProcessesAtOnce(t *testing.T) {
	t.Parallel()
	cache := pgtest.CacheDir(t)
	var wg sync.WaitGroup
	outs := make([][]byte, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = command(t, cache, "scenario", "concurrent").CombinedOutput()
		}()
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil || !strings.Contains(string(outs[i]), "verdict: invariants held") {
			t.Errorf("process %d: %v\n%s", i, errs[i], outs[i])
		}
	}
}

func TestCompletionOffersScenarioNames(t *testing.T) {
	t.Parallel()
	r := cli(t, nil, "__complete", "scenario", "")
	for _, want := range append(scenarios.Names(), "list", "all") {
		if !strings.Contains(r.stdout, want+"\t") {
			t.Errorf("completion lacks %s:\n%s", want, r.stdout)
		}
	}
}

func TestKeysGC(t *testing.T) {
	t.Parallel()
	pool, db := pgtest.DB(t)
	_, err := pool.Exec(context.Background(), `INSERT INTO idempotency_keys (user_id, key, request_hash, status, lock_id, locked_until, created_at) VALUES
		(1, 'old-completed', 'h', 'completed', NULL, NULL, now() - interval '48 hours'),
		(1, 'new-completed', 'h', 'completed', NULL, NULL, now() - interval '1 hour'),
		(1, 'old-stuck', 'h', 'in_progress', 'l', now() - interval '47 hours', now() - interval '48 hours'),
		(1, 'old-but-locked', 'h', 'in_progress', 'l', now() + interval '1 hour', now() - interval '48 hours')`)
	if err != nil {
		t.Fatal(err)
	}
	r := cli(t, nil, "keys", "gc", "--older-than", "24h", "--database-url", db.URL)
	if r.code != 0 || !strings.Contains(r.stdout, "deleted 2 keys") || !strings.Contains(r.stdout, "old-completed\n  old-stuck\n") {
		t.Fatalf("%+v", r)
	}
	var left int
	pool.QueryRow(context.Background(), "SELECT count(*) FROM idempotency_keys").Scan(&left)
	if left != 2 {
		t.Fatalf("%d keys left, want new-completed and old-but-locked", left)
	}
	if r := cli(t, nil, "keys", "gc", "--older-than", "-1h"); r.code != exitcode.Usage {
		t.Fatalf("%+v", r)
	}
}

func TestMistakeCommand(t *testing.T) {
	t.Parallel()
	// The list is the catalogue: every mistake once, the stories first, a
	// row each from the first column up to the first blank line (as
	// scenario list prints its rows, and .ci/windows reads them), then the
	// others, indented by two.
	r := cli(t, nil, "mistake", "list")
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	var listed []string
	stories, others, _ := strings.Cut(r.stdout, "\n\n")
	for _, line := range strings.Split(stories, "\n") {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(line, " ") {
			listed = append(listed, f[0])
		}
	}
	for _, line := range strings.Split(others, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   ") {
			listed = append(listed, f[0])
		}
	}
	var want []string
	for _, m := range scenarios.Mistakes {
		want = append(want, m.Name)
	}
	for _, m := range mistakes.Catalogue {
		if !m.Story() {
			want = append(want, m.Name)
		}
	}
	if !slices.Equal(listed, want) {
		t.Errorf("bank mistake list names %v, want the catalogue: %v", listed, want)
	}
	r = cli(t, nil, "mistake", "nosuch")
	if r.code != exitcode.Usage || !strings.Contains(r.stderr, "no-fencing") {
		t.Fatalf("%+v", r)
	}
	oneLine(t, r)
	// A mistake of the catalogue with no story of its own says where it
	// is shown.
	r = cli(t, nil, "mistake", "check-then-insert")
	if r.code != exitcode.Usage || !strings.Contains(r.stderr, "bank scenario concurrent") {
		t.Fatalf("%+v", r)
	}
	oneLine(t, r)
}

// TestMistakeFlag: --mistake serves a mistake of the catalogue that has a
// server; a catalogued one without a server, and a name not in the
// catalogue, are refused in one line saying what it serves; --break, the
// old name, still works (hidden from --help).
func TestMistakeFlag(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"serve", "--mistake", "check-then-insert"},
		{"serve", "--mistake", "nosuch"},
		{"torture", "--break", "nosuch"},
	} {
		r := cli(t, nil, args...)
		if r.code != exitcode.Usage || !strings.Contains(r.stderr, "no-fencing, no-lock-expiry") {
			t.Errorf("%v: %+v", args, r)
		}
		oneLine(t, r)
	}
	r := cli(t, nil, "serve", "--help")
	if !strings.Contains(r.stdout, "--mistake") || strings.Contains(r.stdout, "--break") {
		t.Errorf("bank serve --help shows --mistake, not --break:\n%s", r.stdout)
	}
}

// TestMistakeThroughTheFrontDoor runs a mistake as a learner would, with
// the real binary (memory-keys starts bank serve processes of its own).
func TestMistakeThroughTheFrontDoor(t *testing.T) {
	t.Parallel()
	out, err := command(t, pgtest.CacheDir(t), "mistake", "memory-keys").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "mistake reproduced") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// TestNoCacheDirSaysWhatToSet: a cache directory that cannot be made
// (here a file stands in its way, which stops root too) is an
// environment failure that names the variable that fixes it.
func TestNoCacheDirSaysWhatToSet(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bankBinary(t), "scenario", "naive")
	cmd.Env = append(os.Environ(), "BANK_CACHE_DIR="+filepath.Join(file, "cache"), "DATABASE_URL=")
	out, err := cmd.CombinedOutput()
	if code := exitOf(err); code != exitcode.Env || !strings.Contains(string(out), "set BANK_CACHE_DIR") || strings.Count(strings.TrimSpace(string(out)), "\n") != 0 {
		t.Errorf("exit %d, %q; want exit 3 and one line naming BANK_CACHE_DIR", code, out)
	}
}

// TestWidth: --width fits the transcript and the diagram in N columns
// (but the lesson's own wider lines); too narrow a width is refused.
func TestWidth(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"scenario", "crash", "--width", "50"}, {"scenario", "crash", "--diagram", "--width", "60"}, {"mistake", "no-fencing", "--width", "64"}} {
		r := cli(t, nil, args...)
		width, _ := strconv.Atoi(args[len(args)-1])
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
		for _, l := range strings.Split(r.stdout, "\n") {
			if n := utf8.RuneCountInString(l); n > width {
				t.Errorf("%v: a line of %d columns: %q", args, n, l)
			}
		}
	}
	if r := cli(t, nil, "scenario", "crash", "--width", "20"); r.code != exitcode.Usage || !strings.Contains(r.stderr, "50 or more") {
		t.Errorf("--width 20: exit %d, %q", r.code, r.stderr)
	}
	if r := cli(t, nil, "scenario", "crash", "--diagram", "--width", "55"); r.code != exitcode.Usage || !strings.Contains(r.stderr, "diagram in: give 60 or more") {
		t.Errorf("--diagram --width 55: exit %d, %q", r.code, r.stderr)
	}
}
