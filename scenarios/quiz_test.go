package scenarios

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/zudojs/bank/bank/pgserver/pgtest"
)

// TestQuizAnswersComeFromTheRuns: every question's right answer is read
// from its scenario's golden transcript (which TestGolden keeps equal to
// a real run), and is one of its options; the bank holds at least 30.
func TestQuizAnswersComeFromTheRuns(t *testing.T) {
	if len(Quiz) < 30 {
		t.Errorf("the quiz has %d questions, want at least 30", len(Quiz))
	}
	for _, q := range Quiz {
		raw, err := os.ReadFile("../testdata/scenarios/" + q.Scenario + ".golden")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.read(string(raw)); err != nil {
			t.Error(err)
		}
	}
}

// TestDrawRepeatsWithItsSeed: a seed gives the same five, another seed
// others, and no question twice in a draw.
func TestDrawRepeatsWithItsSeed(t *testing.T) {
	a, b, c := Draw(7, 5), Draw(7, 5), Draw(8, 5)
	same := func(x, y []Question) bool {
		for i := range x {
			if x[i].Ask != y[i].Ask {
				return false
			}
		}
		return true
	}
	if !same(a, b) || same(a, c) {
		t.Fatal("a draw does not repeat with its seed, or two seeds drew the same")
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
	var preds []Prediction
	for _, q := range qs[:2] {
		preds = append(preds, Prediction{Q: q, Chosen: "409"})
	}
	var out bytes.Buffer
	if _, err := Run(context.Background(), pgtest.Cluster(), Crash, &out, Options{Predictions: preds}); err != nil {
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
