package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/quiz"
	"github.com/zudojs/bank/scenarios/practice"
)

// fits fails the test for every line of out wider than the quiz's 80
// columns, counted in runes (₦ is one column, three bytes).
func fits(t *testing.T, what, out string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("%s: a line of %d columns (at most 80): %q", what, n, l)
		}
	}
}

// TestQuiz: the right answers, read from a first run's JSON, pass the
// same draw; wrong ones do not; the answers come from real runs; the
// same seed gives the same choices in the same order; every line fits
// in 80 columns.
func TestQuiz(t *testing.T) {
	t.Parallel()
	first := cli(t, nil, "quiz", "--seed", "5", "--answers", "1,1,1,1,1", "--json")
	var res quiz.Result
	if err := json.Unmarshal([]byte(first.stdout), &res); err != nil || len(res.Questions) != quiz.Length {
		t.Fatalf("exit %d, %v: %s %s", first.code, err, first.stdout, first.stderr)
	}
	matchesShape(t, "bank.quiz/v1", []byte(first.stdout))
	var rights, wrongs []string
	for i, q := range res.Questions {
		if q.Right < 1 || q.Why == "" || q.Scenario == "" {
			t.Fatalf("a question without its answer or explanation: %+v", q)
		}
		if drawn := practice.Draw(5, quiz.Length)[i]; q.Ask != drawn.Ask || !slices.Equal(q.Options, drawn.Options) {
			t.Fatalf("question %d: %q %q, but seed 5 draws %q %q", i+1, q.Ask, q.Options, drawn.Ask, drawn.Options)
		}
		rights = append(rights, fmt.Sprint(q.Right))
		wrongs = append(wrongs, fmt.Sprint(q.Right%len(q.Options)+1))
	}
	pass := cli(t, nil, "quiz", "--seed", "5", "--answers", strings.Join(rights, ","))
	if pass.code != exitcode.OK || !strings.Contains(pass.stdout, "5 of 5: passed") {
		t.Fatalf("the right answers: exit %d\n%s", pass.code, pass.stdout)
	}
	fail := cli(t, nil, "quiz", "--seed", "5", "--answers", strings.Join(wrongs, ","))
	if fail.code != exitcode.No || !strings.Contains(fail.stdout, "0 of 5: not yet") || !strings.Contains(fail.stdout, "See it: bank scenario ") {
		t.Fatalf("wrong answers: exit %d\n%s", fail.code, fail.stdout)
	}
	for i, q := range res.Questions { // the text shows the JSON's choices, in its order
		for j, opt := range q.Options {
			if want := fmt.Sprintf("\n   %d) %s\n", j+1, opt); !strings.Contains(fail.stdout, want) {
				t.Errorf("question %d: no %q in:\n%s", i+1, want, fail.stdout)
			}
		}
	}
	fits(t, "the right answers", pass.stdout)
	fits(t, "wrong answers", fail.stdout)
	other := cli(t, nil, "quiz", "--seed", "6", "--answers", "1,1,1,1,1")
	if other.stdout == fail.stdout {
		t.Fatal("two seeds drew the same questions")
	}
	fits(t, "seed 6", other.stdout)
}

// TestQuizUsage: a wrong --answers is refused before anything runs (the
// database here cannot be reached, which would be exit 3), on one line
// that names the answer and the choices allowed, with exit 2.
func TestQuizUsage(t *testing.T) {
	t.Parallel()
	noDatabase := map[string]string{"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"quiz"}, "bank quiz asks on a terminal"},
		{[]string{"quiz", "--answers", "1,2"}, "--answers takes 5 choice numbers, one per question, such as 2,1,3,4,1; got 2"},
		{[]string{"quiz", "--answers", "1,2,3,4,1,2"}, "got 6"},
		{[]string{"quiz", "--seed", "3", "--answers", "1,x,1,1,1"}, `bank: answer 2 is "x", not a number: question 2 has choices 1 to 4` + "\n"},
		{[]string{"quiz", "--seed", "3", "--answers", "1,1,,1,1"}, `bank: answer 3 is "", not a number: question 3 has choices 1 to 4` + "\n"},
		{[]string{"quiz", "--seed", "3", "--answers", "9,9,9,9,9"}, "bank: answer 1 is 9, but question 1 has choices 1 to 4\n"},
		{[]string{"quiz", "--seed", "3", "--answers", "1,2,9,4,1"}, "bank: answer 3 is 9, but question 3 has choices 1 to 4\n"},
		{[]string{"quiz", "--seed", "3", "--answers", "1,2,3,4,0", "--json"}, "bank: answer 5 is 0, but question 5 has choices 1 to 4\n"},
		{[]string{"quiz", "--answers", "1,-1,1,1,1"}, "bank: answer 2 is -1, but question 2 has choices 1 to 4\n"},
	} {
		r := cli(t, noDatabase, c.args...)
		if r.code != exitcode.Usage || !strings.Contains(r.stderr, c.want) || r.stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 and %q", c.args, r.code, r.stderr, r.stdout, c.want)
		}
		oneLine(t, r)
	}
}
