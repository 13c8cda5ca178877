package payoutgrade

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/cmd/bank/internal/witness"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/render"
)

// A check's diagram is drawn once it is over, from what the grader kept
// (its timeline: the rows it wrote, each start and kill of a worker, told
// as they happened), and, added at the end, every request the
// rail got and what it answered, and (one worker only: the witness does
// not say which worker a session was) every write of the worker's to the
// outbox, from the witness. The lanes: each worker, the rail, the
// database.
const (
	laneRail   = "rail"
	laneOutbox = lab.ActorDB // drawn last
)

// drawnRequests bounds a diagram: a worker that loops on a down rail
// sends hundreds.
const drawnRequests = 40

func workerLane(n int) string { return fmt.Sprintf("worker %d", n) }

// drawing is the check's diagram.
func (t *trial) drawing(c Check) *render.Recording {
	tl := t.timeline
	calls := t.rail.log()
	for i, c := range calls {
		if i == drawnRequests {
			tl.Line(time.Time{}, "(the first %d requests to the rail only: %d more came after)", drawnRequests, len(calls)-drawnRequests)
			break
		}
		w := workerLane(c.Door)
		what := "GET …" + tail(c.Reference)
		if c.Method == http.MethodPost {
			what = fmt.Sprintf("POST …%s, %s", tail(c.Reference), bank.Naira(c.Kobo))
		}
		tl.Arrow(c.At, w, laneRail, what, "")
		switch {
		case c.Status == 0:
			tl.Arrow(c.Answered, laneRail, w, "paid; the answer is lost", "lost")
		default:
			tl.Arrow(c.Answered, laneRail, w, answerWords(c), answerMark(c.Status))
		}
	}
	if len(t.workers) == 1 && t.witness {
		writes, err := witness.Since(t.ctx, t.db, 0)
		if err == nil {
			for _, w := range writes {
				if isTable(w.Table, "payout_outbox") && w.Op == "UPDATE" {
					tl.Arrow(w.At, workerLane(1), laneOutbox, outboxWords(w), "")
				}
			}
		}
	}
	return tl.Recording(c.Name, c.Title)
}

// answerWords is the rail's answer to c, short.
func answerWords(c call) string {
	switch {
	case c.Paid && c.Status == http.StatusCreated:
		return "201 paid"
	case c.Status == http.StatusOK:
		return "200: paid"
	case c.Status == http.StatusNotFound && c.Method == http.MethodGet:
		return "404: never received"
	case c.Paid:
		return fmt.Sprintf("paid, yet answers %d", c.Status)
	case c.Status == http.StatusConflict:
		return "409: a reference it has had"
	}
	return fmt.Sprint(c.Status)
}

func answerMark(status int) string {
	switch {
	case status >= 500:
		return "error"
	case status == http.StatusConflict:
		return "in-progress"
	case status >= 400 && status != http.StatusNotFound:
		return "refused"
	}
	return ""
}

// outboxWords says what a write of the worker's did to a row.
func outboxWords(w witness.Write) string {
	var before, after struct {
		ID        int64   `json:"id"`
		Reference *string `json:"reference"`
		Status    string  `json:"status"`
	}
	json.Unmarshal([]byte(w.Old), &before)
	json.Unmarshal([]byte(w.New), &after)
	switch {
	case after.Status != before.Status:
		return fmt.Sprintf("row %d: %s", after.ID, after.Status)
	case after.Reference != nil && (before.Reference == nil || *before.Reference != *after.Reference):
		return fmt.Sprintf("row %d: reference …%s", after.ID, tail(*after.Reference))
	}
	return fmt.Sprintf("row %d: updated", after.ID)
}

// tail is a reference's end, enough to tell references apart.
func tail(ref string) string {
	if len(ref) > 6 {
		return ref[len(ref)-6:]
	}
	return ref
}
