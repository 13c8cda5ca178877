package clientgrade

import (
	"fmt"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/grade/record"
	"github.com/zudojs/bank/scenarios/lab/render"
)

// A check's diagram is drawn once it is over, from what the trial saw:
// each run of the client (its start, a kill, its end and outcome) and
// every request the front saw, with what it did with it and when. The
// lanes: the learner's client, the grader's front, the lesson's bank.
const (
	laneClient = "client"
	laneFront  = "front"
	laneBank   = "bank"
)

// drawnFronts: a check with more fronts (lockstep's twelve clients) draws
// the first only, and says how many more there were.
const drawnFronts = 1

// drawing is the check's diagram.
func (t *trial) drawing(c Check) *render.Recording {
	tl := record.NewTimeline(t.started)
	line, arrow := tl.Line, tl.Arrow
	for _, r := range t.clients {
		if r.front != t.fronts[0] {
			continue
		}
		line(r.start, "the grader starts the client (run %d)", r.n)
		switch {
		case !r.killed.IsZero():
			line(r.killed, "the grader kills the client (SIGKILL)")
		case r.out != nil:
			line(r.start.Add(r.out.Took), "run %d ends: %s", r.n, r.out)
		}
	}
	for _, f := range t.fronts[:min(len(t.fronts), drawnFronts)] {
		for _, a := range f.all() {
			what := a.Method + " " + a.Path
			if a.Method == "POST" {
				what = "POST /transfers, key " + shortKey(a.Key)
			}
			arrow(a.At, laneClient, laneFront, what, "")
			if a.Bank != 0 {
				arrow(a.At, laneFront, laneBank, "passed on", "")
				arrow(a.At, laneBank, laneFront, fmt.Sprint(a.Bank), "")
			}
			switch {
			case a.Status != 0:
				arrow(a.Answered, laneFront, laneClient, fmt.Sprint(a.Status)+retryWords(a.Retry), answerMark(a.Status))
			case !a.Answered.IsZero():
				arrow(a.Answered, laneFront, laneClient, "closed, unanswered", "lost")
			case !a.Gone.IsZero() && t.killedBefore(f, a.Run, a.Gone):
				arrow(a.Gone, laneClient, laneFront, "its connection dies with it", "lost")
			case !a.Gone.IsZero():
				arrow(a.Gone, laneClient, laneFront, "gives up the attempt, hangs up", "")
			}
		}
	}
	if len(t.fronts) > drawnFronts {
		line(time.Time{}, "(the first client only: %d more ran beside it, through fronts of their own)", len(t.fronts)-drawnFronts)
	}
	return tl.Recording(c.Name, c.Title)
}

// killedBefore reports whether run n of the client through f was killed
// at or before at.
func (t *trial) killedBefore(f *front, n int, at time.Time) bool {
	for _, c := range t.clients {
		if c.front == f && c.n == n && !c.killed.IsZero() && !c.killed.After(at) {
			return true
		}
	}
	return false
}

// answerMark is how the diagram marks an answer: a refusal, a failure
// that may pass, or a success.
func answerMark(status int) string {
	switch {
	case status >= 500:
		return "error"
	case status == 409 || status == 429:
		return "in-progress"
	case status >= 400:
		return "refused"
	}
	return ""
}

// shortKey is a key's end, enough to tell keys apart in a diagram.
func shortKey(k string) string {
	switch {
	case k == "":
		return "(none)"
	case len(k) > 8:
		return "…" + k[len(k)-8:]
	}
	return k
}
