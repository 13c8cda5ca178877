package hookgrade

import (
	"strings"
	"testing"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/grade/record"
)

// TestDrawing: a check's diagram tells each delivery and its answer (or
// none), a forged one as forged, and what the grader did, in the order
// they happened.
func TestDrawing(t *testing.T) {
	start := time.Now()
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	e := event{ID: "evt_1", Payment: "pay_101", Account: 2, Kobo: 500_000}
	tr := &trial{start: start, timeline: record.NewTimeline(start)}
	tr.deliveries = []delivery{
		{Event: e, SignedAt: at(100), Sent: at(100), Ended: at(5100), Err: "timed out"},
		{Event: e, SignedAt: at(6000), Sent: at(6000), Forged: true, Answered: at(6010), Ended: at(6010), Status: 401},
	}
	tr.timeline.Line(at(5200), "the grader kills the consumer (SIGKILL)")
	rec := tr.drawing(Check{Name: "killed"})
	want := []string{
		"provider>consumer evt_1: pay_101, ₦5,000 ",
		"consumer>provider no answer lost",
		"> the grader kills the consumer (SIGKILL) ",
		"provider>consumer evt_1: pay_101, ₦5,000, forged ",
		"consumer>provider 401 refused",
	}
	if got := record.Told(rec); got != strings.Join(want, "\n") {
		t.Errorf("the diagram's events:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}
