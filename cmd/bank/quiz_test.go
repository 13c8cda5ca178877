package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

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
	var res quizResult
	if err := json.Unmarshal([]byte(first.stdout), &res); err != nil || len(res.Questions) != quizLength {
		t.Fatalf("exit %d, %v: %s %s", first.code, err, first.stdout, first.stderr)
	}
	var rights, wrongs []string
	for i, q := range res.Questions {
		if q.Right < 1 || q.Why == "" || q.Scenario == "" {
			t.Fatalf("a question without its answer or explanation: %+v", q)
		}
		if drawn := practice.Draw(5, quizLength)[i]; q.Ask != drawn.Ask || !slices.Equal(q.Options, drawn.Options) {
			t.Fatalf("question %d: %q %q, but seed 5 draws %q %q", i+1, q.Ask, q.Options, drawn.Ask, drawn.Options)
		}
		rights = append(rights, fmt.Sprint(q.Right))
		wrongs = append(wrongs, fmt.Sprint(q.Right%len(q.Options)+1))
	}
	pass := cli(t, nil, "quiz", "--seed", "5", "--answers", strings.Join(rights, ","))
	if pass.code != exitOK || !strings.Contains(pass.stdout, "5 of 5: passed") {
		t.Fatalf("the right answers: exit %d\n%s", pass.code, pass.stdout)
	}
	fail := cli(t, nil, "quiz", "--seed", "5", "--answers", strings.Join(wrongs, ","))
	if fail.code != exitNo || !strings.Contains(fail.stdout, "0 of 5: not yet") || !strings.Contains(fail.stdout, "See it: bank scenario ") {
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
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) || r.stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 and %q", c.args, r.code, r.stderr, r.stdout, c.want)
		}
		oneLine(t, r)
	}
}

// TestQuizAsksAgain: on a terminal, an answer that is not one of the
// choices is asked again, and the learner is told the range.
func TestQuizAsksAgain(t *testing.T) {
	var out bytes.Buffer
	a := &app{io: stdio{Out: &out}}
	if n := ask(a, bufio.NewReader(strings.NewReader("9\nx\n\n0\n3\n")), 4); n != 3 {
		t.Fatalf("ask took %d, want 3\n%s", n, out.String())
	}
	if got := strings.Count(out.String(), "your answer (1-4): "); got != 5 {
		t.Errorf("asked %d times, want 5:\n%s", got, out.String())
	}
	for _, want := range []string{`"9" is not one of the choices: answer a number from 1 to 4.`, `"x" is not one`, `"0" is not one`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
	if n := ask(a, bufio.NewReader(strings.NewReader("7")), 4); n != 0 {
		t.Errorf("at the end of the input ask took %d, want 0 (no answer)", n)
	}
}

// TestQuizLinesFit: every line the quiz can print, for every question of
// the bank (as question 5, with each of its choices as the lab's answer,
// right and wrong), and every score, is at most 80 columns; the words
// come out whole and in order, continuation lines are indented under
// their text, and an amount or a command is never split.
func TestQuizLinesFit(t *testing.T) {
	var all bytes.Buffer
	wrapped := 0 // continuation lines of questions
	for _, q := range practice.Quiz {
		var out bytes.Buffer
		printQuestion(&out, 5, q)
		for j, right := range q.Options {
			printVerdict(&out, q, quizOutcome{Given: j + 1, Right: j + 1, Correct: true}, right)
			printVerdict(&out, q, quizOutcome{Given: (j+1)%len(q.Options) + 1, Right: j + 1}, right)
		}
		fits(t, q.Ask, out.String())
		text := out.String()
		lines := strings.Split(strings.TrimPrefix(text, "\n"), "\n")
		if !strings.HasPrefix(lines[0], "5. ") {
			t.Fatalf("question 5 starts %q", lines[0])
		}
		for i := 1; !strings.HasPrefix(lines[i], "   1) "); i++ {
			if !strings.HasPrefix(lines[i], "   ") || strings.HasPrefix(lines[i], "    ") {
				t.Errorf("%q: continuation %q is not under the question's text", q.Ask, lines[i])
			}
			wrapped++
		}
		if !strings.Contains(strings.Join(strings.Fields(text), " "), strings.Join(strings.Fields(q.Ask), " ")) ||
			!strings.Contains(strings.Join(strings.Fields(text), " "), strings.Join(strings.Fields(q.Why), " ")) {
			t.Errorf("%q: its words did not come out whole and in order:\n%s", q.Ask, text)
		}
		if !strings.Contains(text, "See it: bank scenario "+q.Scenario+"\n") {
			t.Errorf("%q: the command bank scenario %s is split:\n%s", q.Ask, q.Scenario, text)
		}
		all.Write(out.Bytes())
	}
	for score := 0; score <= quizLength; score++ {
		printScore(&all, score, quizLength)
	}
	fits(t, "the scores", all.String())
	for _, l := range strings.Split(all.String(), "\n") {
		if strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "   ") {
			t.Errorf("a continuation line indented less than its text: %q", l)
		}
	}
	if wrapped == 0 {
		t.Error("no question was wrapped: the test no longer tests wrapping")
	}

	// An amount, a code and a key at the edge go to the next line whole.
	for _, word := range []string{"₦10,000.", "insufficient_funds", "Idempotency-Key", "ada-transfer-2024-0001"} {
		for pad := 60; pad <= 80; pad++ {
			text := strings.Repeat("x", pad-3) + " " + word + " and more words after it"
			lines := wrapWords("   ", "   ", text, quizWidth)
			joined := strings.Join(lines, "\n")
			if !strings.Contains(joined, word) {
				t.Fatalf("%q split:\n%s", word, joined)
			}
			for _, l := range lines {
				if utf8.RuneCountInString(l) > quizWidth {
					t.Fatalf("a line of %d runes: %q", utf8.RuneCountInString(l), l)
				}
			}
			if len(lines) > 1 && !strings.HasPrefix(lines[1], "   ") {
				t.Fatalf("continuation not indented: %q", lines[1])
			}
		}
	}
}
