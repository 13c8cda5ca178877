package practice

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// failing is the findings that did not pass.
func failing(fs []Finding) []Finding {
	return slices.DeleteFunc(slices.Clone(fs), func(f Finding) bool { return f.Passed })
}

func report(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		mark := "ok     "
		if !f.Passed {
			mark = "NOT YET"
		}
		b.WriteString("  " + mark + "  " + f.What + ": " + f.Detail + "\n")
	}
	return b.String()
}

// wantOneFailure: exactly one finding fails, its name starts with what,
// and its detail says each of says.
func wantOneFailure(t *testing.T, fs []Finding, what string, says ...string) {
	t.Helper()
	bad := failing(fs)
	if len(bad) != 1 || !strings.HasPrefix(bad[0].What, what) {
		t.Fatalf("want exactly %q to fail:\n%s", what, report(fs))
	}
	for _, s := range says {
		if !strings.Contains(bad[0].Detail, s) {
			t.Errorf("%s: no %q in %q", what, s, bad[0].Detail)
		}
	}
}

var lessonOrders = map[int]string{1: "shipped", 2: "cancelled"}

// TestPracticeShipReadsMeaning: the lesson's lines and a learner's own
// words for them pass; each wrong line fails with its reason.
func TestPracticeShipReadsMeaning(t *testing.T) {
	ex, _ := LookupExercise("ship")
	if bad := failing(shipFindings(lessonOrders, ex.Want)); len(bad) != 0 {
		t.Fatalf("the lesson's own lines fail:\n%s", report(bad))
	}
	for _, own := range [][]string{
		{"Shipped!", "ok, already shipped", "Error: cannot ship order 2, it is cancelled", "order 3 not found"},
		{"order 1: shipped", "order 1: already shipped, nothing to do", "ValueError: order 2 is cancelled", "error: no such order (3)"},
		{"SHIPPED", "Already shipped (OK)", "refused: order is canceled", "order 3 does not exist"},
	} {
		if bad := failing(shipFindings(lessonOrders, own)); len(bad) != 0 {
			t.Errorf("%q fails:\n%s", own, report(bad))
		}
	}
	for _, c := range []struct {
		name    string
		printed []string
		line    string
		says    []string
	}{
		{"shipped twice", []string{"shipped", "shipped", "error: order is cancelled", "error: order is missing"}, "line 2", []string{`printed "shipped"`, "already"}},
		{"an error the second time", []string{"shipped", "error: order is shipped", "error: order is cancelled", "error: order is missing"}, "line 2", []string{"must still succeed"}},
		{"no error for cancelled", []string{"shipped", "already shipped (ok)", "order is cancelled", "error: order is missing"}, "line 3", []string{"give an error"}},
		{"no reason for cancelled", []string{"shipped", "already shipped (ok)", "error", "error: order is missing"}, "line 3", []string{"cancelled"}},
		{"missing not said", []string{"shipped", "already shipped (ok)", "error: order is cancelled", "error"}, "line 4", []string{"missing"}},
		{"a fifth line", []string{"shipped", "already shipped (ok)", "error: order is cancelled", "error: order is missing", "done"}, "four lines", []string{`"done"`}},
	} {
		t.Run(c.name, func(t *testing.T) { wantOneFailure(t, shipFindings(lessonOrders, c.printed), c.line, c.says...) })
	}
}

// TestPracticeFeedbackAgreesWithTheRows: whatever the database holds, no
// finding says it holds something else, and a line that claims what the
// database contradicts is not passed.
func TestPracticeFeedbackAgreesWithTheRows(t *testing.T) {
	ex, _ := LookupExercise("ship")
	shows := regexp.MustCompile(`the database shows order (\d) '(\w+)'`)
	for _, status := range []map[int]string{
		lessonOrders,
		{1: "paid", 2: "cancelled"},            // nothing shipped, though it said so
		{1: "shipped", 2: "shipped"},           // the cancelled order shipped
		{1: "shipped", 2: "cancelled", 3: "x"}, // an order made up
		{2: "cancelled"},                       // order 1 deleted
	} {
		fs := shipFindings(status, ex.Want)
		for _, f := range fs {
			for _, m := range shows.FindAllStringSubmatch(f.Detail, -1) {
				if got := status[int(m[1][0]-'0')]; got != m[2] {
					t.Errorf("%v: %q says order %s is %s, the rows say %q", status, f.Detail, m[1], m[2], got)
				}
			}
		}
		lineOK := map[int]bool{}
		for i, f := range fs[:4] {
			lineOK[i] = f.Passed
		}
		if status[1] != "shipped" && (lineOK[0] || lineOK[1]) {
			t.Errorf("%v: a line saying order 1 shipped passed:\n%s", status, report(fs))
		}
		if status[2] != "cancelled" && lineOK[2] {
			t.Errorf("%v: a line saying order 2 was refused passed:\n%s", status, report(fs))
		}
		if _, ok := status[3]; ok && lineOK[3] {
			t.Errorf("%v: a line saying order 3 is missing passed:\n%s", status, report(fs))
		}
	}
}

// lessonRun is the keys after the lesson's cleanup.js, in either mode.
func lessonRun(m Mode) keyState {
	k := keyState{
		left:      map[string]keyRow{newCompleted: {status: "completed"}, oldLocked: {status: "in_progress"}},
		keptNames: []string{newCompleted, oldLocked},
		inserted:  map[string]bool{},
		deleted:   map[string]bool{oldCompleted: true, oldStuck: true},
	}
	if m == ProgramMode {
		for _, name := range lessonKeys {
			k.inserted[name] = true
		}
	}
	return k
}

// TestPracticeCleanup: the lesson's lines pass in both modes, in the
// driver's own list format; a DELETE without RETURNING is told what the
// database shows and what to print, next to the rows it agrees with.
func TestPracticeCleanup(t *testing.T) {
	ex, _ := LookupExercise("cleanup")
	for m, want := range map[Mode][]string{ProgramMode: ex.Want, SQLMode: ex.WantSQL} {
		if bad := failing(cleanupFindings(lessonRun(m), m, want)); len(bad) != 0 {
			t.Errorf("mode %d: the lesson's own lines fail:\n%s", m, report(bad))
		}
	}
	python := []string{"deleted: ['old-completed', 'old-stuck']", "kept: ['new-completed']"} // the guard may be left out
	if bad := failing(cleanupFindings(lessonRun(ProgramMode), ProgramMode, python)); len(bad) != 0 {
		t.Errorf("Python's lists fail:\n%s", report(bad))
	}

	fs := cleanupFindings(lessonRun(ProgramMode), ProgramMode, []string{"deleted: []", "kept: [ 'new-completed', 'old-locked' ]"})
	wantOneFailure(t, fs, "the deleted: line",
		`the database shows old-completed and old-stuck deleted, but your program printed "deleted: []"`, "RETURNING key")
	fs = cleanupFindings(lessonRun(SQLMode), SQLMode, []string{"deleted: []", "kept: [ 'new-completed', 'old-locked' ]"})
	wantOneFailure(t, fs, "the deleted: line", "the database shows old-completed and old-stuck deleted, but your statement returned no key", "RETURNING key")

	// Deleting by age alone: the guard goes; the lines, which say so, pass.
	k := lessonRun(ProgramMode)
	delete(k.left, oldLocked)
	k.keptNames, k.deleted[oldLocked] = []string{newCompleted}, true
	fs = cleanupFindings(k, ProgramMode, []string{"deleted: [ 'old-locked', 'old-completed', 'old-stuck' ]", "kept: [ 'new-completed' ]"})
	wantOneFailure(t, fs, "old-locked", "your clean-up deleted it", "lock is still valid")

	// A program that inserted nothing is not told the keys are "gone".
	fs = cleanupFindings(keyState{left: map[string]keyRow{oldLocked: {}}, keptNames: []string{oldLocked}, inserted: map[string]bool{}, deleted: map[string]bool{}},
		ProgramMode, []string{"deleted: []", "kept: [ 'old-locked' ]"})
	for _, f := range fs {
		if strings.HasPrefix(f.What, oldCompleted) && (f.Passed || !strings.Contains(f.Detail, "never inserted")) {
			t.Errorf("nothing inserted: %s: %s", f.What, f.Detail)
		}
	}
}

// TestPracticeShouldRetryReasons: each wrong answer is told its reason,
// and the lesson's output and other languages' pass.
func TestPracticeShouldRetryReasons(t *testing.T) {
	ex, _ := LookupExercise("should-retry")
	for _, printed := range [][]string{
		ex.Want,
		{"network  True", "201      False", "400      False", "409      True", "422      False", "429      True", "500      True", "503      True"},
		{"'network': yes", "201 -> no", "400: false", "409: TRUE", "422 false", "429 true", "500 true", "503 true"},
	} {
		fs, _ := judgeShouldRetry(context.Background(), evidence{}, ProgramMode, printed)
		if bad := failing(fs); len(bad) != 0 {
			t.Errorf("%q fails:\n%s", printed, report(bad))
		}
	}
	why := map[string][]string{
		"network": {"may succeed", "key makes it safe"},
		"201":     {"done"},
		"400":     {"fails the same way"},
		"409":     {"may be done", "same key"},
		"422":     {"fails the same way"},
		"429":     {"may succeed", "key makes the retry safe"},
		"500":     {"may succeed later", "key makes the retry safe"},
		"503":     {"may succeed later", "key makes the retry safe"},
	}
	for i, outcome := range scenarios.RetryOutcomes {
		printed := slices.Clone(ex.Want)
		flipped := "true"
		if strings.HasSuffix(printed[i], "true") {
			flipped = "false"
		}
		printed[i] = outcome + " " + flipped
		fs, _ := judgeShouldRetry(context.Background(), evidence{}, ProgramMode, printed)
		wantOneFailure(t, fs, "line "+string(rune('1'+i))+" ("+outcome+")", why[outcome]...)
	}
}

// TestPracticePromptIsWhatIsChecked: each prompt shows the rows prepared
// and the lines the lesson's solution prints, or, where those lines are
// the answer itself, their form and never their values; every line fits
// in Width columns.
func TestPracticePromptIsWhatIsChecked(t *testing.T) {
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	for _, ex := range Exercises {
		p := ex.Prompt(ProgramMode, SQLMode)
		shown := ex.Want
		// should-retry's lines are its answers: true or false for each.
		if ex.Name == "should-retry" && ex.Form == nil {
			t.Errorf("%s: no Form: the prompt would show the lesson's lines, its answers", ex.Name)
		}
		if ex.Form != nil || ex.Name == "should-retry" {
			shown = ex.Form
			for _, w := range ex.Want {
				if strings.Contains(flat(p), flat(w)) {
					t.Errorf("%s: the prompt gives an answer away, %q:\n%s", ex.Name, w, p)
				}
			}
		}
		for _, s := range slices.Concat(shown, ex.WantSQL, strings.Split(ex.Prepared, "\n"), strings.Split(ex.PreparedSQL, "\n"), ex.Rules) {
			for l := range strings.SplitSeq(s, "\n") {
				if !strings.Contains(flat(p), flat(l)) {
					t.Errorf("%s: the prompt lacks %q:\n%s", ex.Name, l, p)
				}
			}
		}
		if ex.IsSQL() != strings.Contains(p, "--sql FILE") {
			t.Errorf("%s: the prompt and IsSQL disagree about --sql:\n%s", ex.Name, p)
		}
		texts := []string{p, Fold(ex.Solution, "  ")}
		for _, h := range ex.Hints {
			texts = append(texts, Fold(h, "  "))
		}
		for _, text := range texts {
			for l := range strings.SplitSeq(text, "\n") {
				if n := utf8.RuneCountInString(l); n > Width {
					t.Errorf("%s: a line of %d columns: %q", ex.Name, n, l)
				}
			}
		}
	}
}

// TestCleanupNamesEveryColumn: the clean-up's task names every column of
// the key store's table with its type, so that a program can be written
// without looking at the database first.
func TestCleanupNamesEveryColumn(t *testing.T) {
	ex, _ := LookupExercise("cleanup")
	p := strings.Join(strings.Fields(ex.Prompt(ProgramMode, SQLMode)), " ")
	table := idem.Schema[strings.Index(idem.Schema, "CREATE TABLE IF NOT EXISTS idempotency_keys"):]
	table = table[:strings.Index(table, ");")]
	n := 0
	for _, l := range strings.Split(table, "\n")[1:] {
		f := strings.Fields(strings.TrimSuffix(strings.TrimSpace(l), ","))
		if len(f) < 2 || f[0] == "PRIMARY" {
			continue
		}
		n++
		if col := f[0] + " " + f[1]; !strings.Contains(p, col) {
			t.Errorf("the clean-up's prompt does not name the column %q", col)
		}
	}
	if n < 9 {
		t.Fatalf("read %d columns from idem.Schema", n)
	}
}

// TestExerciseOwnSolutions: the lab's own solution to each exercise, run
// on the database the exercise prepares, passes the same checks as a
// learner's; so does the lesson's statement under --sql.
func TestExerciseOwnSolutions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, ex := range Exercises {
		a, err := CheckExercise(ctx, pgtest.Clones(), ex, ProgramMode, ex.OwnSolution)
		if err != nil {
			t.Fatal(err)
		}
		if !a.Passed() {
			t.Errorf("%s: the lab's own solution fails:\n%s", ex.Name, report(a.Findings))
		}
	}
	// The learner's statement runs as the learner's role (on the lab's own
	// server), which may add to the lab's record of keys and do nothing
	// else with it.
	asLearner := func(ctx context.Context, url string, do func(*pgx.Conn) (Ran, error)) (Ran, error) {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return Ran{}, err
		}
		defer conn.Close(ctx)
		return do(conn)
	}
	ex, _ := LookupExercise("cleanup")
	a, err := CheckExercise(ctx, pgtest.Clones(), ex, SQLMode, func(ctx context.Context, url string, _ *pgxpool.Pool) (Ran, error) {
		return asLearner(ctx, url, func(c *pgx.Conn) (Ran, error) {
			return RunSQL(ctx, c, ex, "DELETE FROM idempotency_keys WHERE created_at < $1 AND (status = 'completed' OR locked_until < $2) RETURNING key")
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if !a.Passed() {
		t.Errorf("the lesson's statement fails:\n%s", report(a.Findings))
	}
	// The lab's record sees deletes made in the learner's own session, and
	// a TRUNCATE.
	a, err = CheckExercise(ctx, pgtest.Clones(), ex, ProgramMode, func(ctx context.Context, url string, _ *pgxpool.Pool) (Ran, error) {
		return asLearner(ctx, url, func(c *pgx.Conn) (Ran, error) {
			_, err := c.Exec(ctx, "TRUNCATE idempotency_keys")
			return Ran{Printed: "deleted: []\nkept: []\n"}, err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if f := a.Findings[len(a.Findings)-1]; f.Passed || !strings.Contains(f.Detail, "TRUNCATE") {
		t.Errorf("a TRUNCATE: %+v", f)
	}
}

// TestPracticeCleanupManyKeys: a statement that leaves thousands of keys
// of its own is judged like any other, and every finding stays one short
// line. (5,000 keys: the regular expressions cost 35 s under -race for
// 100,000; the names printed are a set, so the judging is linear.)
func TestPracticeCleanupManyKeys(t *testing.T) {
	k := lessonRun(SQLMode)
	for i := range 5000 {
		name := "big-" + strconv.Itoa(i)
		k.left[name] = keyRow{status: "completed"}
		k.inserted[name] = true
		k.keptNames = append(k.keptNames, name)
	}
	slices.Sort(k.keptNames)
	kept := "kept: " + scenarios.NodeList(k.keptNames[1:]) // one left out
	fs := cleanupFindings(k, SQLMode, []string{"deleted: [ 'old-completed', 'old-stuck' ]", kept, kept})
	for _, f := range fs {
		if len(f.Detail) > 1000 {
			t.Errorf("%s: a detail of %d bytes", f.What, len(f.Detail))
		}
	}
	wantOneFailure(t, slices.DeleteFunc(fs, func(f Finding) bool { return f.What == "the two lines and no others" }),
		"the kept: line", "and 4992 more")
}
