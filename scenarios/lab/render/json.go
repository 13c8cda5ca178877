package render

import (
	"encoding/json"
	"io"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/scenarios/lab"
)

// JSON is a sink that prints one JSON object per line for each event of
// the transcript, the diagram's messages, each verdict and each mistake's
// side by side (the states, drawn only in pictures, are left out).
func JSON(w io.Writer) lab.Sink { return &jsonPrinter{enc: json.NewEncoder(w)} }

// EventsSchema names the shape of the JSON lines (bank help json).
const EventsSchema = "bank.events/v1"

// PassOrFail is a verdict in the words every --json of the lab uses.
func PassOrFail(ok bool) string {
	if ok {
		return "pass"
	}
	return "fail"
}

type jsonPrinter struct {
	enc      *json.Encoder
	scenario string
}

// jsonEvent is an event as --json prints it: Kind as lab.Event has it.
type jsonEvent struct {
	Schema    string           `json:"schema"`
	Scenario  string           `json:"scenario"`
	Kind      string           `json:"kind"`
	Step      string           `json:"step,omitempty"`
	Text      string           `json:"text,omitempty"`
	Response  *jsonResponse    `json:"response,omitempty"`
	Balances  map[string]int64 `json:"balancesKobo,omitempty"`
	TotalKobo *int64           `json:"totalKobo,omitempty"`
	Transfers *int             `json:"transfers,omitempty"`
	Verdict   string           `json:"verdict,omitempty"` // pass: it came out as the lesson teaches; fail
	Checks    []jsonCheck      `json:"checks,omitempty"`
	From      string           `json:"from,omitempty"`
	To        string           `json:"to,omitempty"`
	Mark      string           `json:"mark,omitempty"`
	Clock     string           `json:"clock,omitempty"`
}

type jsonResponse struct {
	Status   int             `json:"status"`
	Replayed bool            `json:"replayed"`
	Body     json.RawMessage `json:"body,omitempty"`
}

type jsonCheck struct {
	Check    string `json:"check"`
	Holds    bool   `json:"holds"`
	Expected bool   `json:"expectedToHold"`
	Detail   string `json:"detail,omitempty"`
}

func (p *jsonPrinter) Event(e lab.Event) {
	if e.Scenario != nil {
		p.scenario = e.Scenario.Name
	}
	out := jsonEvent{Schema: EventsSchema, Scenario: p.scenario, Kind: e.Kind, Step: e.Step, Text: e.Text}
	switch e.Kind {
	case "state":
		return
	case "scenario":
		out.Text = e.Scenario.Summary
	case "step":
		out.Text = ""
	case "response":
		r := e.Response
		out.Response = &jsonResponse{Status: r.Status, Replayed: r.Replayed}
		if json.Valid(r.Body) {
			out.Response.Body = r.Body
		}
	case "balances":
		out.Balances, out.TotalKobo, out.Transfers = kobo(*e.Balances)
	case "message":
		out.From, out.To, out.Mark, out.Clock = e.From, e.To, e.Mark, e.Clock
	case "verdict":
		out.Step = ""
		out.Verdict = PassOrFail(e.Verdict.Reproduced)
		for _, r := range e.Verdict.Results {
			out.Checks = append(out.Checks, jsonCheck{r.Name, r.Holds, r.Expected, r.Detail})
		}
	case "mistake":
		out.Step, out.Text = "", e.Mistake.Mistake
		out.Verdict = PassOrFail(e.Mistake.Reproduced())
	}
	_ = p.enc.Encode(out)
}

func kobo(s bank.Snapshot) (map[string]int64, *int64, *int) {
	m := map[string]int64{}
	for i, h := range s.Holders {
		m[h] = s.Balances[i]
	}
	total, n := s.Total, s.Transfers
	return m, &total, &n
}
