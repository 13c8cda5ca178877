package practice

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/zudojs/bank/scenarios"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
	"github.com/zudojs/bank/scenarios/lab/render"
)

// TestQuizAnswersComeFromTheRuns: every question's right answer is read
// from a real run of its scenario, as bank quiz reads it, and is one of
// its options; the bank holds at least 30.
func TestQuizAnswersComeFromTheRuns(t *testing.T) {
	if len(Quiz) < 30 {
		t.Errorf("the quiz has %d questions, want at least 30", len(Quiz))
	}
	runAnswers(t)
}

// TestQuizChoices: every question has at least four distinct choices, so
// that none is a coin toss (a true-or-false question drawn once in a
// five lets a fixed answer pass far more often).
func TestQuizChoices(t *testing.T) {
	for _, q := range Quiz {
		seen := map[string]bool{}
		for _, o := range q.Options {
			seen[o] = true
		}
		if len(q.Options) < 4 || len(seen) != len(q.Options) {
			t.Errorf("%s: %q has choices %q, want at least 4 distinct", q.Scenario, q.Ask, q.Options)
		}
	}
}

// runAnswers is every question's right answer, read from real runs of
// the scenarios (once for the test binary), as bank quiz reads them.
func runAnswers(t *testing.T) map[string]string {
	t.Helper()
	answersOnce.Do(func() {
		rights, err := Answers(context.Background(), pgtest.Clones(), Quiz)
		if err != nil {
			answersErr = err
			return
		}
		answers = map[string]string{}
		for i, q := range Quiz {
			answers[q.Ask] = rights[i]
		}
	})
	if answersErr != nil {
		t.Fatal(answersErr)
	}
	return answers
}

var (
	answersOnce sync.Once
	answers     map[string]string
	answersErr  error
)

// TestQuizCannotBePassedByPattern: the same answer to every question
// (bank quiz --answers k,k,k,k,k) passes, 4 of 5 right, for at most 3 of
// the seeds 1 to 40, whichever k; and no position holds the right answer
// in more than a third of the questions drawn. Before the choices were
// shuffled, 2,2,2,2,2 passed 7 of 40 and 2 was right in 101 of 200.
func TestQuizCannotBePassedByPattern(t *testing.T) {
	const length, pass, seeds = 5, 4, 40 // as bank quiz draws and passes
	rights := runAnswers(t)
	most := 0
	for _, q := range Quiz {
		most = max(most, len(q.Options))
	}
	at := make([]int, most+1) // how often each position is the right one
	for k := 1; k <= most; k++ {
		passed := 0
		for seed := uint64(1); seed <= seeds; seed++ {
			score := 0
			for _, q := range Draw(seed, length) {
				right := q.Choice(rights[q.Ask])
				if right == 0 {
					t.Fatalf("seed %d: %q lost its right answer %q in the shuffle: %q", seed, q.Ask, rights[q.Ask], q.Options)
				}
				if k == 1 {
					at[right]++
				}
				if right == k {
					score++
				}
			}
			if score >= pass {
				passed++
			}
		}
		t.Logf("--answers %d,%d,%d,%d,%d passes %d of seeds 1-%d", k, k, k, k, k, passed, seeds)
		if passed > 3 {
			t.Errorf("--answers %d,%d,%d,%d,%d passes %d of seeds 1-%d, want at most 3", k, k, k, k, k, passed, seeds)
		}
	}
	t.Logf("the right answer, by position, over %d questions drawn: %v", seeds*length, at[1:])
	for k, n := range at[1:] {
		if n*3 > seeds*length {
			t.Errorf("choice %d is the right one in %d of %d questions drawn", k+1, n, seeds*length)
		}
	}
}

// TestDrawRepeatsWithItsSeed: a seed gives the same five with their
// choices in the same order, another seed others, no question twice in a
// draw; across seeds a question's choices come in different orders, and
// drawing leaves the bank's own order alone.
func TestDrawRepeatsWithItsSeed(t *testing.T) {
	bank := map[string][]string{}
	for _, q := range Quiz {
		bank[q.Ask] = slices.Clone(q.Options)
	}
	a, b, c := Draw(7, 5), Draw(7, 5), Draw(8, 5)
	same := func(x, y []Question) bool {
		for i := range x {
			if x[i].Ask != y[i].Ask || !slices.Equal(x[i].Options, y[i].Options) {
				return false
			}
		}
		return true
	}
	if !same(a, b) || same(a, c) {
		t.Fatal("a draw does not repeat with its seed, or two seeds drew the same")
	}
	orders := map[string]map[string]bool{} // question: the orders it came in
	drawn := map[string]int{}
	for seed := uint64(1); seed <= 40; seed++ {
		for _, q := range Draw(seed, 5) {
			if orders[q.Ask] == nil {
				orders[q.Ask] = map[string]bool{}
			}
			orders[q.Ask][strings.Join(q.Options, "|")] = true
			drawn[q.Ask]++
		}
	}
	drawnTwice := 0
	for ask, n := range drawn {
		if n >= 2 {
			drawnTwice++
			if len(orders[ask]) < 2 {
				t.Errorf("%q, drawn %d times by seeds 1-40, always came with its choices in one order", ask, n)
			}
		}
	}
	if drawnTwice < 10 {
		t.Errorf("only %d questions drawn twice by seeds 1-40", drawnTwice)
	}
	for _, q := range Quiz {
		if !slices.Equal(q.Options, bank[q.Ask]) {
			t.Errorf("drawing changed the bank's choices for %q: %q, was %q", q.Ask, q.Options, bank[q.Ask])
		}
	}
	seen := map[string]bool{}
	for _, q := range a {
		if seen[q.Ask] {
			t.Fatalf("%q drawn twice", q.Ask)
		}
		seen[q.Ask] = true
	}
}

// TestPredictionsAreMarkedWhereTheirLinesAppear: with --predict, each
// prediction is marked under the line that answers it, and scored.
func TestPredictionsAreMarkedWhereTheirLinesAppear(t *testing.T) {
	qs := QuestionsFor("crash")
	if len(qs) < 2 {
		t.Fatalf("crash has %d questions", len(qs))
	}
	var preds []render.Prediction
	for _, q := range qs[:2] {
		preds = append(preds, q.Prediction("409"))
	}
	var out bytes.Buffer
	if _, err := lab.Run(context.Background(), pgtest.Clones(), scenarios.Crash, lab.Options{Sink: render.Text(&out, render.Options{Predictions: preds})}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"retry after 10 s: 409 request_in_progress\n   ↳ you predicted \"409\": right\n",
		"retry after 31 s: 201 transfer 1\n   ↳ you predicted \"409\"; the lab printed \"201\".",
		"your predictions: 1 of 2 right\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
}

// TestQuizQuestionsStandAlone: a question that leans on another (it says
// "the same", or names a claim, a lock or a transfer that only the other
// one sets up) is a Sequel, asked about the question just before it in
// the bank, of its own scenario; and over many seeds and sizes every
// drawn sequel comes right after the question it leans on, and no draw is
// short or repeats a question. (bank quiz --seed 6 once asked "The retry
// comes 31 s after the claim" with no claim, and "The same, with the
// event's id recorded …" after a question about something else.)
func TestQuizQuestionsStandAlone(t *testing.T) {
	for i, q := range Quiz {
		switch {
		case q.Sequel && (i == 0 || Quiz[i-1].Scenario != q.Scenario):
			t.Errorf("%q is a sequel, but the question before it in the bank is not of %s", q.Ask, q.Scenario)
		case !q.Sequel && leansOn(q.Ask) != "":
			t.Errorf("%q leans on another question (%q) but is not a sequel: say what it is about, or make it one", q.Ask, leansOn(q.Ask))
		}
	}
	for seed := uint64(0); seed < 5000; seed++ {
		for _, n := range []int{1, 2, 5, 7} {
			draw := Draw(seed, n)
			if len(draw) != n {
				t.Fatalf("seed %d: %d questions drawn, want %d", seed, len(draw), n)
			}
			seen := map[string]bool{}
			for j, q := range draw {
				if seen[q.Ask] {
					t.Fatalf("seed %d: %q drawn twice", seed, q.Ask)
				}
				seen[q.Ask] = true
				if !q.Sequel {
					continue
				}
				i := slices.IndexFunc(Quiz, func(b Question) bool { return b.Ask == q.Ask })
				if j == 0 || draw[j-1].Ask != Quiz[i-1].Ask {
					t.Fatalf("seed %d, %d questions: %q is drawn without %q just before it", seed, n, q.Ask, Quiz[i-1].Ask)
				}
			}
		}
	}
}

// leansOn is what a question's words refer to that the question does not
// set up itself ("" when none): "the same …" at its start, or the claim,
// the retry or the second transfer where nothing before it makes one.
func leansOn(ask string) string {
	low := strings.ToLower(ask)
	for _, p := range []string{"the same", "same ", "also ", "then ", "this time", "now "} {
		if strings.HasPrefix(low, p) {
			return p
		}
	}
	for _, ref := range [][2]string{{"the claim", "claim"}, {"the retry", "a retry"}, {"the second transfer", "two transfers"}} {
		if i := strings.Index(low, ref[0]); i >= 0 && !strings.Contains(low[:i], ref[1]) {
			return ref[0]
		}
	}
	return ""
}
