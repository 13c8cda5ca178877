package quiz

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zudojs/bank/cmd/bank/internal/term"
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

// TestAsksAgain: on a terminal, an answer that is not one of the
// choices is asked again, and the learner is told the range.
func TestAsksAgain(t *testing.T) {
	var out bytes.Buffer
	ctx := context.Background()
	if n, err := Ask(ctx, &out, term.NewLines(strings.NewReader("9\nx\n\n0\n3\n")), 4); n != 3 || err != nil {
		t.Fatalf("ask took %d, %v, want 3\n%s", n, err, out.String())
	}
	if got := strings.Count(out.String(), "your answer (1-4): "); got != 5 {
		t.Errorf("asked %d times, want 5:\n%s", got, out.String())
	}
	for _, want := range []string{`"9" is not one of the choices: answer a number from 1 to 4.`, `"x" is not one`, `"0" is not one`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
	if n, err := Ask(ctx, &out, term.NewLines(strings.NewReader("7")), 4); n != 0 || err != nil {
		t.Errorf("at the end of the input ask took %d, %v, want 0 (no answer)", n, err)
	}
}

// TestAskStopsAtCtrlC: a question waiting for a line that does not come
// (a terminal nobody types at) returns ctx's error as soon as ctx ends,
// as Ctrl-C ends it, and ends its line; no answer typed later is read.
func TestAskStopsAtCtrlC(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	type asked struct {
		n   int
		err error
	}
	done := make(chan asked)
	in := term.NewLines(r)
	go func() {
		n, err := Ask(ctx, &out, in, 4)
		done <- asked{n, err}
	}()
	cancel()
	got := <-done // before the fix, Ask read on until a line came: this never returned
	if got.n != 0 || !errors.Is(got.err, context.Canceled) || !strings.HasSuffix(out.String(), ": \n") {
		t.Fatalf("Ask at Ctrl-C: %d, %v, printed %q", got.n, got.err, out.String())
	}
}

// TestLinesFit: every line the quiz can print, for every question of
// the bank (as question 5, with each of its choices as the lab's answer,
// right and wrong), and every score, is at most 80 columns; the words
// come out whole and in order, continuation lines are indented under
// their text, and an amount or a command is never split.
func TestLinesFit(t *testing.T) {
	var all bytes.Buffer
	wrapped := 0 // continuation lines of questions
	for _, q := range practice.Quiz {
		var out bytes.Buffer
		PrintQuestion(&out, 5, q)
		for j, right := range q.Options {
			PrintVerdict(&out, q, Outcome{Given: j + 1, Right: j + 1, Correct: true}, right)
			PrintVerdict(&out, q, Outcome{Given: (j+1)%len(q.Options) + 1, Right: j + 1}, right)
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
	for score := 0; score <= Length; score++ {
		PrintScore(&all, score, Length)
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
			lines := wrapWords("   ", "   ", text, Width)
			joined := strings.Join(lines, "\n")
			if !strings.Contains(joined, word) {
				t.Fatalf("%q split:\n%s", word, joined)
			}
			for _, l := range lines {
				if utf8.RuneCountInString(l) > Width {
					t.Fatalf("a line of %d runes: %q", utf8.RuneCountInString(l), l)
				}
			}
			if len(lines) > 1 && !strings.HasPrefix(lines[1], "   ") {
				t.Fatalf("continuation not indented: %q", lines[1])
			}
		}
	}
}
