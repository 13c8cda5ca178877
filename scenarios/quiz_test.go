package scenarios

import (
	"os"
	"testing"
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
