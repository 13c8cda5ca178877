package payoutgrade

import (
	"strings"
	"testing"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/grade/record"
)

// TestDrawing: a check's diagram tells what the grader did and every
// request the rail got, with its answer, in the order they happened, each
// answer when it was given; a worker that loops is drawn in part.
func TestDrawing(t *testing.T) {
	start := time.Now()
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	tr := &trial{start: start, rail: newRail(nil), workers: []*worker{{n: 1}}, timeline: record.NewTimeline(start)}
	tr.timeline.Line(at(0), "the grader starts worker 1")
	tr.rail.calls = []call{
		// logged as answered: the lost POST came first, its GET after
		{Door: 1, Method: "GET", Reference: "po-1-abcdef", At: at(300), Answered: at(301), Status: 200, Did: "asked: paid"},
		{Door: 1, Method: "POST", Reference: "po-1-abcdef", Kobo: 100_000, At: at(100), Answered: at(200), Paid: true, Did: "paid, the answer lost"},
	}
	rec := tr.drawing(Check{Name: "lost-reply", Title: "the answer lost"})
	want := []string{
		"> the grader starts worker 1 ",
		"worker 1>rail POST …abcdef, ₦1,000 ",
		"rail>worker 1 paid; the answer is lost lost",
		"worker 1>rail GET …abcdef ",
		"rail>worker 1 200: paid ",
	}
	if got := record.Told(rec); got != strings.Join(want, "\n") {
		t.Errorf("the diagram's events:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if rec.Events[2].Clock != "0.2 s" {
		t.Errorf("the lost answer is drawn at %q, want 0.2 s", rec.Events[2].Clock)
	}

	for range drawnRequests + 5 {
		tr.rail.calls = append(tr.rail.calls, call{Door: 1, Method: "POST", Reference: "po-1-abcdef", Kobo: 100_000, At: at(400), Answered: at(400), Status: 503})
	}
	rec = tr.drawing(Check{Name: "rail-down"})
	last := rec.Events[len(rec.Events)-1]
	if !strings.Contains(last.Text, "the first 40 requests to the rail only: 7 more") {
		t.Errorf("a long run's diagram ends %q", last.Text)
	}
}
