// Package record keeps what the grader did and saw in one run of a
// check, as it happened, as the lab's events (package scenarios/lab),
// which package scenarios/lab/render draws as a sequence diagram, in the
// terminal or as SVG: the check's diagram on the report card.
//
// The events are recorded where the grader acts or sees, as it does: its
// proxy, for every request it passes on and every answer it passes back
// or loses; the trial, for every kill, pause and restart, and every lock
// the grader takes in PostgreSQL and what it sees waiting on it. Nothing
// is drawn that did not happen. Each trial has a Recorder of its own.
package record

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/render"
)

// The lanes of a check's diagram, besides each server ("server A", "server
// B").
const (
	ActorApp   = lab.ActorApp // the grader's own client, which also throws the faults
	ActorProxy = "proxy"      // the grader's proxy in front of each server
	ActorDB    = lab.ActorDB  // PostgreSQL, where the grader takes its locks
)

// HungUp is the arrow of a request the app stopped waiting for.
const HungUp = "stops waiting, and hangs up"

// maxArrows bounds a diagram: past it, arrows are counted, not drawn (a
// torture run sends hundreds of requests).
const maxArrows = 60

// Recorder keeps one trial's events in its Recording, as they happen,
// from any goroutine.
type Recorder struct {
	mu    sync.Mutex
	rec   *render.Recording
	wire  Wire
	start time.Time
	done  bool // the trial is over: what comes later is not the check's

	arrows int            // arrows kept
	more   int            // arrows past maxArrows
	moreAt int            // the index of the line that counts them
	kinds  map[string]int // what they were
	order  []string

	burst []burstArrow // while a burst is tallied (BurstStart), its arrows

	keys  map[string]*keySeen // what each user's key was answered, by "user key"
	last  *keySeen            // the key of the request drawn last
	fence string              // a server whose lock was taken over: its refusal is fenced
}

// burstArrow is an arrow of a burst, and how many times it came.
type burstArrow struct {
	e lab.Event
	n int
}

// keySeen is what the answers to one user's key have shown.
type keySeen struct {
	inProgress bool           // a 409 came
	ids        map[int64]bool // the transfers its 201s named
}

// Wire is what a recorder must know of the lesson's API to label the
// requests and answers its proxy sees: the grader, which speaks it, gives
// it.
type Wire struct {
	Tokens    map[string]string                 // each user's bearer token, by user
	Body      func(from, to, kobo int64) string // a transfer request as the lesson writes it
	ErrorCode func(body string) string          // the code an error body names, in either shape the contract takes, or ""
}

// New starts the recording of one run of the check name, whose title
// is title; the clock starts now.
func New(name, title string, wire Wire) *Recorder {
	rec := &render.Recording{Scenario: &lab.Scenario{Name: name, Summary: title}}
	return &Recorder{rec: rec, wire: wire, start: time.Now(), moreAt: -1, kinds: map[string]int{}, keys: map[string]*keySeen{}}
}

// Recording is the recording the events go into, as they happen, until
// Finish: the grader hangs it on the check's result, for its diagram.
func (r *Recorder) Recording() *render.Recording { return r.rec }

// clock is the time since the check began, as the diagram's clock.
func (r *Recorder) clock() string { return Clock(time.Since(r.start)) }

// Arrow records one message between two lanes: from, to, its text, and
// its mark (a lab.Event's Mark: "lost", "refused", …; "" for none).
func (r *Recorder) Arrow(from, to, text, mark string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := lab.Event{Kind: "message", From: from, To: to, Text: text, Mark: mark, Clock: r.clock()}
	if r.burst != nil {
		for i := range r.burst {
			if b := r.burst[i].e; b.From == from && b.To == to && b.Text == text && b.Mark == mark {
				r.burst[i].n++
				return
			}
		}
		r.burst = append(r.burst, burstArrow{e, 1})
		return
	}
	r.keep(e)
}

// keep adds a message to the recording, or counts it past the bound.
func (r *Recorder) keep(e lab.Event) {
	if r.done {
		return
	}
	if r.arrows < maxArrows {
		r.arrows++
		r.rec.Events = append(r.rec.Events, e)
		return
	}
	if r.moreAt < 0 {
		r.moreAt = len(r.rec.Events)
		r.rec.Events = append(r.rec.Events, lab.Event{Kind: "line"})
	}
	kind := e.Text
	switch {
	case e.From == ActorApp && e.To == ActorProxy && e.Text != HungUp:
		kind = "requests"
	case e.From == ActorProxy && e.To == ActorApp && e.Mark == "lost":
		kind = "replies lost"
	case e.From == ActorProxy && e.To == ActorApp:
		kind = "answers"
	case e.From == ActorProxy || e.To == ActorProxy:
		kind = "" // the proxy's side of a request or an answer, counted once
	}
	r.more++
	if kind != "" {
		if r.kinds[kind] == 0 && !slices.Contains(counted, kind) {
			r.order = append(r.order, kind)
		}
		r.kinds[kind]++
	}
	var exchanges, others []string
	for _, k := range counted {
		if r.kinds[k] > 0 {
			exchanges = append(exchanges, fmt.Sprintf("%d %s", r.kinds[k], k))
		}
	}
	for _, k := range r.order {
		others = append(others, fmt.Sprintf("%s ×%d", k, r.kinds[k]))
	}
	what := strings.Join(slices.DeleteFunc([]string{strings.Join(exchanges, ", "), strings.Join(others, ", ")}, func(s string) bool { return s == "" }), "; ")
	r.rec.Events[r.moreAt].Text = fmt.Sprintf("… and %d more arrows from here on, not drawn (the diagram keeps the first %d): %s", r.more, maxArrows, what)
}

// counted are the arrows past the bound that are counted by what they
// are; the rest (faults, locks) by their text.
var counted = []string{"requests", "answers", "replies lost"}

// Event records an event of another kind: a line, or the bank's balances.
func (r *Recorder) Event(kind, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.done {
		r.rec.Events = append(r.rec.Events, lab.Event{Kind: kind, Text: text})
	}
}

// Line records a line of text across the diagram.
func (r *Recorder) Line(format string, args ...any) { r.Event("line", fmt.Sprintf(format, args...)) }

// BurstStart tallies the arrows that follow, until BurstEnd, instead of
// drawing each: copies sent at once come back in the scheduler's order,
// so they are drawn as one arrow each of what was sent and answered, with
// how many times (×N), in the order each was first seen.
func (r *Recorder) BurstStart() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.burst = []burstArrow{}
}

// BurstEnd draws the burst's arrows, each once, with how many times it
// came.
func (r *Recorder) BurstEnd() {
	r.mu.Lock()
	defer r.mu.Unlock()
	arrows := r.burst
	r.burst = nil
	for _, b := range arrows {
		if b.n > 1 {
			b.e.Text += fmt.Sprintf(" ×%d", b.n)
		}
		r.keep(b.e)
	}
}

// Mark is where the recording stands, for Fold.
func (r *Recorder) Mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.rec.Events)
}

// Fold draws a request resent until it is answered (the grader's settle)
// as its first and last tries, and a line for the tries between: tries
// are the marks at which each try began. Only the tries' own arrows are
// folded: if anything else happened meanwhile, every try is drawn.
func (r *Recorder) Fold(tries []int) {
	if len(tries) < 3 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	from, to := tries[1], tries[len(tries)-1]
	if r.done || to > len(r.rec.Events) || r.moreAt >= from {
		return
	}
	sent, tally, order := 0, map[string]int{}, []string(nil)
	for _, e := range r.rec.Events[from:to] {
		switch {
		case e.Kind != "message" || e.From == ActorDB || e.To == ActorDB:
			return
		case e.From == ActorApp && e.To == ActorProxy && e.Text != HungUp:
			sent++
		case e.From == ActorApp:
			return // a fault, not a try
		case e.To == ActorApp:
			if tally[e.Text] == 0 {
				order = append(order, e.Text)
			}
			tally[e.Text]++
		}
	}
	if sent != len(tries)-2 {
		return
	}
	answers := make([]string, len(order))
	for i, a := range order {
		answers[i] = fmt.Sprintf("%s ×%d", a, tally[a])
	}
	r.arrows -= to - from
	more := fmt.Sprintf("%d more tries", sent)
	if sent == 1 {
		more = "1 more try"
	}
	summary := lab.Event{Kind: "line", Text: fmt.Sprintf("… %s of the same request, answered: %s", more, strings.Join(answers, "; "))}
	r.rec.Events = append(append(r.rec.Events[:from:from], summary), r.rec.Events[to:]...)
}

// Fencing says that server's lock was taken over: its next refusal is the
// fencing token at work.
func (r *Recorder) Fencing(server string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fence = server
}

// Finish ends the recording: nothing after it is the check's.
func (r *Recorder) Finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = true
}

// Exchange is one request the proxy passes on, as its diagram needs it:
// Request returns it, and Answer and NoAnswer take it back.
type Exchange struct {
	seen *keySeen // what its key's answers showed before it was sent; nil without a key
	// afterConflict: a 409 to its key had come back before it was sent.
	afterConflict bool
	tag           string // its key's end, to tell its answer among others' (torture)
}

// Request draws a request the proxy got (what, as whom, under which key)
// and passes on to server.
func (r *Recorder) Request(server string, req *http.Request, raw []byte) Exchange {
	text := Clean(req.Method + " " + req.URL.RequestURI())
	var t struct{ From, To, AmountKobo int64 }
	if req.Method == http.MethodPost && json.Unmarshal(raw, &t) == nil && t.AmountKobo > 0 {
		text = fmt.Sprintf("POST %s %d→%d", bank.Naira(t.AmountKobo), t.From, t.To)
		if string(raw) != r.wire.Body(t.From, t.To, t.AmountKobo) {
			text += " (written otherwise)"
		}
	}
	user := "nobody"
	for u, token := range r.wire.Tokens {
		if req.Header.Get("Authorization") == "Bearer "+token {
			user = u
		}
	}
	if user != "ada" {
		text += " as " + user
	}
	var x Exchange
	switch key := Clean(req.Header.Get("Idempotency-Key")); {
	case req.Method != http.MethodPost:
	case key == "":
		text += ", no key"
	default:
		text += ", key " + key
		x.tag = "…" + string([]rune(key)[max(0, len([]rune(key))-8):])
		r.mu.Lock()
		if x.seen = r.keys[user+" "+key]; x.seen == nil {
			x.seen = &keySeen{ids: map[int64]bool{}}
			r.keys[user+" "+key] = x.seen
		}
		x.afterConflict = x.seen.inProgress
		r.mu.Unlock()
	}
	r.mu.Lock()
	r.last = x.seen
	r.mu.Unlock()
	r.Arrow(ActorApp, ActorProxy, text, "")
	r.Arrow(ActorProxy, server, "passed on", "")
	return x
}

// Answer is the label and mark of an answer from server to a request:
// what it was, and what its key's answers so far show of it.
func (r *Recorder) Answer(server string, x Exchange, status int, replayed bool, reply []byte) (string, string) {
	var b struct {
		TransferID int64 `json:"transferId"`
		Status     any   `json:"status"`
	}
	json.Unmarshal(reply, &b)
	text := fmt.Sprint(status)
	switch code := r.wire.ErrorCode(string(reply)); {
	case b.TransferID != 0:
		text += fmt.Sprintf(" transfer %d", b.TransferID)
	case code != "":
		text += " " + Clean(code)
	case b.Status != nil:
		text += " " + Clean(fmt.Sprint(b.Status))
	}
	mark := ""
	switch {
	case replayed:
		text, mark = text+" (replayed)", "replayed"
	case status == http.StatusConflict:
		mark = "in-progress"
	case status >= 500:
		mark = "error"
	case status >= 400:
		mark = "refused"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	text += r.whose(x)
	if mark != "" && mark != "replayed" && r.fence == server {
		r.fence = ""
		return text + " (its lock had been taken over)", "fenced"
	}
	if x.seen == nil {
		return text, mark
	}
	fresh := status == http.StatusCreated && !replayed && !x.seen.ids[b.TransferID]
	if status == http.StatusCreated {
		x.seen.ids[b.TransferID] = true
	}
	switch {
	case status == http.StatusConflict:
		x.seen.inProgress = true
	case fresh && x.afterConflict:
		// Sent after its key was answered "in progress", it made a
		// transfer of its own: the server took the key over.
		return text + " (the key in progress taken over)", "takeover"
	}
	return text, mark
}

// NoAnswer is the label of a request server never answered.
func (r *Recorder) NoAnswer(server string, x Exchange) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return "no answer: " + server + "'s connection broke" + r.whose(x)
}

// whose says which key an answer is to, where another key's request
// came since its own (torture's clients send at once).
func (r *Recorder) whose(x Exchange) string {
	if x.seen != nil && x.seen != r.last {
		return ", for " + x.tag
	}
	return ""
}

// Clean keeps a label from the server (a key, an error code) printable
// and short.
func Clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 48 {
		s = string(r[:47]) + "…"
	}
	return s
}
