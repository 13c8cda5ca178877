package hookgrade

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/witness"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/render"
)

// A check's diagram is drawn once it is over, from what the grader kept
// (its timeline: each kill and start of the consumer, told as it
// happened), and, added at the end, every delivery and its answer, and
// every row the consumer's committed transactions wrote, from the
// witness. The lanes: the provider (the grader), the consumer, and its
// database.
const (
	laneProvider = "provider"
	laneConsumer = "consumer"
)

// drawnDeliveries and drawnWrites bound a diagram.
const (
	drawnDeliveries = 30
	drawnWrites     = 40
)

// drawing is the check's diagram.
func (t *trial) drawing(c Check) *render.Recording {
	tl := t.timeline
	for i, d := range t.deliveries {
		if i == drawnDeliveries {
			tl.Line(time.Time{}, "(the first %d deliveries only: %d more came after)", drawnDeliveries, len(t.deliveries)-drawnDeliveries)
			break
		}
		what := fmt.Sprintf("%s: %s, %s", d.Event.ID, d.Event.Payment, naira(d.Event.Kobo))
		switch {
		case d.Forged:
			what += ", forged"
		case d.Sent.Sub(d.SignedAt).Minutes() > 1:
			what += ", signed long ago"
		}
		tl.Arrow(d.Sent, laneProvider, laneConsumer, what, "")
		switch {
		case d.Status != 0:
			tl.Arrow(d.Ended, laneConsumer, laneProvider, fmt.Sprint(d.Status)+shortBody(d.Body), statusMark(d.Status))
		default:
			tl.Arrow(d.Ended, laneConsumer, laneProvider, "no answer", "lost")
		}
	}
	if t.witness {
		if writes, err := witness.Since(t.ctx, t.db, 0); err == nil {
			for i, w := range writes {
				if i == drawnWrites {
					tl.Line(time.Time{}, "(the first %d writes only: %d more came after)", drawnWrites, len(writes)-drawnWrites)
					break
				}
				tl.Arrow(w.At, laneConsumer, lab.ActorDB, writeWords(w), "")
			}
		}
	}
	return tl.Recording(c.Name, c.Title)
}

// shortBody is an answer's body, a few words of it.
func shortBody(b string) string {
	if b = strings.TrimSpace(b); len(b) > 24 {
		b = b[:24] + "…"
	}
	if b == "" {
		return ""
	}
	return " " + b
}

func statusMark(status int) string {
	switch {
	case status >= 500:
		return "error"
	case status >= 400:
		return "refused"
	}
	return ""
}

// writeWords says what one committed write of the consumer's did.
func writeWords(w witness.Write) string {
	_, table, _ := strings.Cut(w.Table, ".")
	table = strings.Trim(table, `"`)
	var row struct {
		Account int64  `json:"account_id"`
		Kobo    int64  `json:"amount_kobo"`
		Source  string `json:"source"`
		ID      int64  `json:"id"`
	}
	json.Unmarshal([]byte(w.New), &row)
	switch {
	case table == "deposits" && w.Op == "INSERT":
		return fmt.Sprintf("deposit %s to account %d (%s)", naira(row.Kobo), row.Account, row.Source)
	case table == "accounts" && w.Op == "UPDATE":
		return fmt.Sprintf("account %d's balance", row.ID)
	}
	return w.Op + " " + table
}
