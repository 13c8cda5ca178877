package record

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/render"
)

// Timeline makes a check's diagram once the check is over, from what the
// grader kept as it went: events told in any order, each at the moment
// it happened, drawn in the order they happened. A line told at no moment
// (the zero time) comes last.
type Timeline struct {
	start time.Time
	hs    []happening
}

type happening struct {
	at time.Time
	e  lab.Event
}

// NewTimeline starts a timeline whose clock reads 0 at start.
func NewTimeline(start time.Time) *Timeline { return &Timeline{start: start} }

// Now is something that happens now, told in words across the diagram.
func (t *Timeline) Now(format string, args ...any) { t.Line(time.Now(), format, args...) }

// Line is something that happened, told in words across the diagram.
func (t *Timeline) Line(at time.Time, format string, args ...any) {
	t.hs = append(t.hs, happening{at, lab.Event{Kind: "line", Text: fmt.Sprintf(format, args...)}})
}

// Arrow is a message from one lane to another; mark is render's (lost,
// error, refused, in-progress, or "").
func (t *Timeline) Arrow(at time.Time, from, to, text, mark string) {
	t.hs = append(t.hs, happening{at, lab.Event{Kind: "message", From: from, To: to, Text: text, Mark: mark}})
}

// Recording is the diagram of the check name (whose title is title).
func (t *Timeline) Recording(name, title string) *render.Recording {
	hs := slices.Clone(t.hs)
	slices.SortStableFunc(hs, func(a, b happening) int {
		if a.at.IsZero() != b.at.IsZero() {
			if a.at.IsZero() {
				return 1
			}
			return -1
		}
		return a.at.Compare(b.at)
	})
	rec := &render.Recording{Scenario: &lab.Scenario{Name: name, Summary: title}}
	for _, h := range hs {
		if h.e.Kind == "message" {
			h.e.Clock = Clock(h.at.Sub(t.start))
		}
		rec.Events = append(rec.Events, h.e)
	}
	return rec
}

// Clock is a diagram's clock: the time since the check began.
func Clock(d time.Duration) string {
	if s := d.Seconds(); s < 100 {
		return fmt.Sprintf("%.1f s", max(0, s))
	}
	return fmt.Sprintf("%.0f s", d.Seconds())
}

// Told is each event of rec in one line (from>to text mark; a line of
// words has no lanes), as tests compare diagrams.
func Told(rec *render.Recording) string {
	var lines []string
	for _, e := range rec.Events {
		lines = append(lines, e.From+">"+e.To+" "+e.Text+" "+e.Mark)
	}
	return strings.Join(lines, "\n")
}
