package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
)

// The event model: every run records what really happened, in order, for
// the pictures (bank scenario --diagram, --html, bank lab) and --json.
// Events come from the calls that print the transcript (Step, Say, Reply,
// Balances) and from the parts of the story that talk to each other: an
// Endpoint (a server the app sends to) and the key store's own account of
// what it did to a key (idem.Store.Observe). Nothing is drawn that did not
// happen.

// Actors of the diagrams, besides the servers a story names.
const (
	ActorApp      = "app"
	ActorDB       = "PostgreSQL"
	actorServer   = "server"
	actorRail     = "the rail"
	actorSMS      = "SMS provider"
	actorQueue    = "the queue"
	actorConsumer = "consumer"
)

// draw records one arrow; a nil lab draws nothing (a fake used alone).
func (l *Lab) draw(from, to, text, mark string) {
	if l != nil {
		l.message(Event{From: from, To: to, Text: text, Mark: mark})
	}
}

// Arrow draws one message of the sequence diagram, from one actor to
// another, for a story whose actors are its own (a resend job, a payment
// provider): call it where the message really goes, never for one that
// did not happen. Mark is one of Event.Mark's, or "".
func (l *Lab) Arrow(from, to, text, mark string) { l.draw(from, to, text, mark) }

// Event is one thing that happened in a run. Its Kind says which fields
// it fills:
//
//	scenario  the run begins: Scenario (its name, summary and notes)
//	step      a step begins: Text is its title; Part, whether the
//	          transcript prints that title
//	line      the transcript says Text
//	response  the transcript says Text about Response, an answer received
//	balances  the transcript prints the bank: Text, and Balances
//	message   an arrow of the sequence diagram: From, To, Text, Mark, Clock
//	state     the bank and its keys at a step's end (Options.States only):
//	          Balances, Keys
//	verdict   the run's invariant checks: Verdict
//	mistake   both halves of a mistake are over: Mistake
//
// Every event but scenario carries Step, the title of the step it
// happened in ("" before the first).
type Event struct {
	Kind string
	Step string
	Part bool
	Text string
	From string
	To   string
	Mark string // message: lost, replayed, in-progress, refused, takeover, fenced, error
	// Verbatim marks a line the lesson itself prints: a transcript shows
	// it as it is, however wide.
	Verbatim bool
	Clock    string // message: simulated time since the lesson's start

	Scenario *Scenario
	Response *Response
	Balances *bank.Snapshot
	Keys     []KeyRow
	Verdict  *Verdict
	Mistake  *MistakeVerdict
}

// Response is an answer as the transcript reports it.
type Response struct {
	Status   int
	Replayed bool
	Body     []byte
}

// Sink hears a run's events, in order, as they happen. The lab calls it
// from one goroutine at a time.
type Sink interface{ Event(Event) }

// Tee is a sink that passes each event to every one of sinks.
type Tee []Sink

func (t Tee) Event(e Event) {
	for _, s := range t {
		if s != nil {
			s.Event(e)
		}
	}
}

// emit sends one event to the run's sink, as part of the current step.
func (l *Lab) emit(e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.emitLocked(e)
}

func (l *Lab) emitLocked(e Event) {
	if e.Kind != "scenario" && e.Step == "" {
		e.Step = l.step
	}
	if l.sink != nil {
		l.sink.Event(e)
	}
}

// KeyRow is one idempotency key as a picture shows it: no lock id (it is
// random), only whether a lock is held and until when.
type KeyRow struct {
	User     int64  `json:"user"`
	Key      string `json:"key"`
	Status   string `json:"status"`
	Until    string `json:"lockedUntil,omitempty"` // simulated time
	Response string `json:"response,omitempty"`
}

// message records one arrow.
func (l *Lab) message(e Event) {
	e.Kind = "message"
	if e.Clock == "" {
		e.Clock = l.clockText(l.Clock.Now())
	}
	l.emit(e)
}

// clockText is a simulated time as the diagrams show it: time since the
// lesson's start.
func (l *Lab) clockText(t time.Time) string {
	d := t.Sub(LessonStart)
	if d < 0 {
		d = 0
	}
	return Human(d) // as the transcript says it: "31 s", "24 h"
}

// actorKey carries, in a request's context, the server handling it, so
// that the key store's events are drawn from the right lane; workKey, what
// its work makes ("transfer", "payout"), so that they name it.
type actorKey struct{}
type workKey struct{}

// Keys gives a key store whose every step is drawn, as an arrow between
// the server handling the request and PostgreSQL.
func (l *Lab) Keys(s *idem.Store) *idem.Store { return l.KeysOf("", s) }

// KeysOf is Keys for a store that a server called name uses where no
// Endpoint hands it the request (behind a real HTTP server, say): its
// steps are drawn from that server's lane.
func (l *Lab) KeysOf(name string, s *idem.Store) *idem.Store {
	s.Observe = func(ctx context.Context, e idem.Event) {
		who, _ := ctx.Value(actorKey{}).(string)
		if who == "" {
			who = name
		}
		if who == "" {
			return // not a drawn server: nothing to draw from
		}
		work, _ := ctx.Value(workKey{}).(string)
		if work == "" {
			work = "transfer"
		}
		text, mark := keyEventText(l, e, work)
		l.message(Event{From: who, To: ActorDB, Text: text, Mark: mark})
	}
	return s
}

// KeySteps is Keys for a key store of another make (one broken on
// purpose, say) that reports each step as the correct store's event
// nearest to it, and, where it takes that step its own way, that way in
// words (own): drawn from the lane of the server handling the request, in
// those words, or in the correct store's where own is "".
func (l *Lab) KeySteps() func(ctx context.Context, e idem.Event, own string) {
	return func(ctx context.Context, e idem.Event, own string) {
		who, _ := ctx.Value(actorKey{}).(string)
		if who == "" {
			return // not a drawn server: nothing to draw from
		}
		text, mark := keyEventText(l, e, "transfer")
		if own != "" {
			text = own
		}
		l.message(Event{From: who, To: ActorDB, Text: text, Mark: mark})
	}
}

func keyEventText(l *Lab, e idem.Event, work string) (string, string) {
	switch e.Kind {
	case idem.Claimed:
		return "claim the key (lock ends at " + l.clockText(e.LockedUntil) + ")", ""
	case idem.Replayed:
		return "key completed: read the stored answer", "replayed"
	case idem.Locked:
		return "key in progress, lock still valid", "in-progress"
	case idem.Reused:
		return "key holds a different request", "refused"
	case idem.TookOver:
		return "lock expired: take the key over (new lock id, until " + l.clockText(e.LockedUntil) + ")", "takeover"
	case idem.Completed:
		if e.Status >= 400 { // a refusal: stored as final, nothing made
			return fmt.Sprintf("no %s: refusal %d stored as the answer: COMMIT", work, e.Status), ""
		}
		return work + " + answer stored: COMMIT", ""
	case idem.Fenced:
		return "store refused: the lock id changed: ROLLBACK", "fenced"
	case idem.Released:
		return "work failed: release the key", "error"
	}
	return "?", ""
}

// Endpoint is a server as the diagrams see it: each request it handles is
// an arrow from the app, and its answer (or the error that ended it) an
// arrow back. LoseNext makes the network lose answers on the way back.
type Endpoint struct {
	lab  *Lab
	name string
	path string // what its requests are drawn as posting to
	h    api.Handler

	mu   sync.Mutex
	lose int
}

// Server draws h as the server called name, answering POST /transfers.
func (l *Lab) Server(name string, h api.Handler) *Endpoint {
	return &Endpoint{lab: l, name: name, path: "/transfers", h: h}
}

// At says what path the server's requests post to (the default is
// /transfers), as the diagram draws them.
func (e *Endpoint) At(path string) *Endpoint { e.path = path; return e }

// LoseNext loses the next n answers after the server has sent them: the
// app gets errLostResponse instead.
func (e *Endpoint) LoseNext(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lose += n
}

// Send delivers one request to the server, and ends the story if it
// failed before answering (see Lab.Must): for a story in which the
// server always answers.
func (e *Endpoint) Send(ctx context.Context, c api.Call) idem.Response {
	resp, err := e.Handle(ctx, c)
	e.lab.Must(err)
	return resp
}

// DropRequest is the network losing a request on its way to the server:
// the server never sees it, and the app gets ErrLostResponse, the same
// timeout as for an answer lost on its way back.
func (e *Endpoint) DropRequest(c api.Call) error {
	e.lab.message(Event{From: ActorApp, To: e.name, Text: requestText(e.path, c) + " (lost on the way)", Mark: "lost", Clock: e.lab.clockText(c.Now)})
	return ErrLostResponse
}

// Handle delivers one request to the server.
func (e *Endpoint) Handle(ctx context.Context, c api.Call) (idem.Response, error) {
	e.lab.message(Event{From: ActorApp, To: e.name, Text: requestText(e.path, c), Clock: e.lab.clockText(c.Now)})
	ctx = context.WithValue(ctx, actorKey{}, e.name)
	if e.path != "/transfers" {
		ctx = context.WithValue(ctx, workKey{}, strings.TrimSuffix(strings.TrimPrefix(e.path, "/"), "s"))
	}
	resp, err := e.h.Handle(ctx, c)
	ev := Event{From: e.name, To: ActorApp}
	switch {
	case errors.Is(err, idem.ErrLockLost):
		// The fencing itself is drawn once, where it happened: the store
		// refusing the answer (idem.Fenced). The app hears nothing.
		ev.Text, ev.Mark = "failed before answering: its transaction rolled back", "error"
	case err != nil:
		// Its error says how the connection died, which varies from run
		// to run; the picture says only that no answer came.
		ev.Text, ev.Mark = "failed before answering", "error"
	default:
		ev.Text, ev.Mark = replyText(resp), replyMark(resp)
	}
	e.mu.Lock()
	lost := err == nil && e.lose > 0
	if lost {
		e.lose--
	}
	e.mu.Unlock()
	if lost {
		ev.Text, ev.Mark = ev.Text+" (lost on the way)", "lost"
		err = ErrLostResponse
	}
	e.lab.message(ev)
	return resp, err
}

// Burst draws many requests sent at once to a server, and their answers
// counted (their order is the scheduler's, so they are drawn as one).
func (l *Lab) Burst(server, what, answers string) {
	l.message(Event{From: ActorApp, To: server, Text: what})
	l.message(Event{From: server, To: ActorApp, Text: answers})
}

// requestText is a request as an arrow's label: what, from whom, which
// key. A transfer is drawn by its amount and accounts alone; a request to
// another path names its path.
func requestText(path string, c api.Call) string {
	var r struct{ From, To, AmountKobo int64 }
	text := "POST " + path
	ok := json.Unmarshal(c.Body, &r) == nil && r.AmountKobo > 0
	switch {
	case ok && path == "/transfers":
		text = fmt.Sprintf("POST %s %d→%d", bank.Naira(r.AmountKobo), r.From, r.To)
	case ok:
		text += " " + bank.Naira(r.AmountKobo)
	}
	if order := fieldOrder(c.Body); ok && order != "from, to, amountKobo" && order != "" {
		text += " {" + order + "}" // the same request, written another way
	}
	if c.UserID != 1 {
		text += fmt.Sprintf(" as user %d", c.UserID)
	}
	if c.Key == "" {
		return text + ", no key"
	}
	return text + ", key " + KeyName(c.Key)
}

func replyText(r idem.Response) string {
	s := fmt.Sprintf("%d %s", r.Status, TransferLabel(r.Body))
	if r.Replayed {
		s += " (replayed)"
	}
	if r.TookOver {
		s += " (took over)"
	}
	return s
}

func replyMark(r idem.Response) string {
	switch {
	case r.Replayed:
		return "replayed"
	case r.TookOver:
		return "takeover"
	case r.Status == http.StatusConflict:
		return "in-progress"
	case r.Status >= 500:
		return "error"
	case r.Status >= 400:
		return "refused"
	}
	return ""
}

// attemptText is the answer to one HTTP attempt of the app's client, as
// an arrow's label and mark.
func attemptText(status int, network string, replayed bool) (string, string) {
	switch {
	case status == 0:
		return "no answer: " + network, "lost"
	case replayed:
		return fmt.Sprintf("%d (replayed)", status), "replayed"
	case status == http.StatusConflict:
		return "409 in progress", "in-progress"
	case status >= 500:
		return fmt.Sprintf("%d", status), "error"
	case status >= 400:
		return fmt.Sprintf("%d", status), "refused"
	}
	return fmt.Sprintf("%d", status), ""
}

// snapshotState records, for the pictures, the bank and the keys as they
// stand at the end of a step.
func (l *Lab) snapshotState(ctx context.Context) {
	if !l.states {
		return
	}
	s, err := bank.Read(ctx, l.DB)
	if err != nil {
		return
	}
	var keys []KeyRow
	rows, err := l.DB.Query(ctx, `SELECT user_id, key, status, locked_until, COALESCE(response_status, 0), COALESCE(response_body::text, '')
		FROM idempotency_keys ORDER BY created_at, user_id, key`)
	if err == nil {
		for rows.Next() {
			var k KeyRow
			var until *time.Time
			var status int
			var body string
			if rows.Scan(&k.User, &k.Key, &k.Status, &until, &status, &body) != nil {
				break
			}
			if until != nil {
				k.Until = l.clockText(*until)
			}
			if status != 0 {
				k.Response = fmt.Sprintf("%d %s", status, TransferLabel([]byte(body)))
			}
			keys = append(keys, k)
		}
		rows.Close()
	}
	l.emit(Event{Kind: "state", Balances: &s, Keys: keys})
}

// fieldOrder is the order a transfer's JSON fields come in, as written
// (empty if one is missing), so that a reordered request is drawn so.
func fieldOrder(body []byte) string {
	names := []string{"from", "to", "amountKobo"}
	at := map[string]int{}
	for _, n := range names {
		i := bytes.Index(body, []byte(`"`+n+`"`))
		if i < 0 {
			return ""
		}
		at[n] = i
	}
	sort.Slice(names, func(i, j int) bool { return at[names[i]] < at[names[j]] })
	return strings.Join(names, ", ")
}
