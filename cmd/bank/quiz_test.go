package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestQuiz: the right answers, read from a first run's JSON, pass the
// same draw; wrong ones do not; the answers come from real runs.
func TestQuiz(t *testing.T) {
	t.Parallel()
	first := cli(t, nil, "quiz", "--seed", "5", "--answers", "1,1,1,1,1", "--json")
	var res quizResult
	if err := json.Unmarshal([]byte(first.stdout), &res); err != nil || len(res.Questions) != quizLength {
		t.Fatalf("exit %d, %v: %s %s", first.code, err, first.stdout, first.stderr)
	}
	var rights, wrongs []string
	for _, q := range res.Questions {
		if q.Right < 1 || q.Why == "" || q.Scenario == "" {
			t.Fatalf("a question without its answer or explanation: %+v", q)
		}
		rights = append(rights, fmt.Sprint(q.Right))
		wrongs = append(wrongs, fmt.Sprint(q.Right%len(q.Options)+1))
	}
	pass := cli(t, nil, "quiz", "--seed", "5", "--answers", strings.Join(rights, ","))
	if pass.code != exitOK || !strings.Contains(pass.stdout, "5 of 5: passed") {
		t.Fatalf("the right answers: exit %d\n%s", pass.code, pass.stdout)
	}
	fail := cli(t, nil, "quiz", "--seed", "5", "--answers", strings.Join(wrongs, ","))
	if fail.code != exitNotAsTaught || !strings.Contains(fail.stdout, "0 of 5: not yet") || !strings.Contains(fail.stdout, "See it: bank scenario ") {
		t.Fatalf("wrong answers: exit %d\n%s", fail.code, fail.stdout)
	}
	if other := cli(t, nil, "quiz", "--seed", "6", "--answers", "1,1,1,1,1"); other.stdout == fail.stdout {
		t.Fatal("two seeds drew the same questions")
	}
}

func TestQuizUsage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"quiz"}, "bank quiz asks on a terminal"},
		{[]string{"quiz", "--answers", "1,2"}, "got 2"},
		{[]string{"quiz", "--answers", "1,x,1,1,1"}, `"x" is not one`},
	} {
		r := cli(t, nil, c.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, %q", c.args, r.code, r.stderr)
		}
		oneLine(t, r)
	}
}
