package practice

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"

	"github.com/zudojs/bank/scenarios"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/pgserver"
	"github.com/zudojs/bank/scenarios/lab/render"
)

// Question is one question of the quiz: a prediction about what a
// scenario prints. Its right answer is never typed in: it is read from a
// real run of the scenario (the run that also produces its golden file),
// so the quiz cannot disagree with the lab.
type Question struct {
	Scenario string   // the scenario whose run answers it
	Ask      string   // the question
	Line     string   // the transcript line that answers it starts with this
	Nth      int      // which such line (0 for the first)
	Pick     pick     // what to read from that line
	Options  []string // the choices, at least 4; the right one must be among them
	Why      string   // the explanation, said after the answer
	// Sequel: the question leans on the one just before it in the bank
	// (of its own scenario), as "The same, with …" does, and is drawn
	// only right after it. Any other question stands on its own.
	Sequel bool
}

type pick int

const (
	pickStatus   pick = iota // the HTTP status on the line
	pickReply                // the status, and "replayed" when it was
	pickSQLState             // the SQLSTATE named on the line
	pickRest                 // everything after the prefix
	pickTotal                // the bank's total on a balances line
	pickRetry                // the client's "true" or "false", said as what it does
)

// retrySays is what the client does for each of should-retry's answers:
// a question of "true" or "false" would be passed by guessing half the
// time, so the quiz asks what happens, among four plausible moves.
var retrySays = map[string]string{
	"true":  "it retries, with the same key",
	"false": "it gives up and shows the refusal",
}

var (
	statusRE   = regexp.MustCompile(`\b([1-5]\d\d)\b`)
	sqlstateRE = regexp.MustCompile(`SQLSTATE (\w{5})`)
	totalRE    = regexp.MustCompile(`total (₦[\d,]+)`)
)

// Quiz is the bank of questions, one lesson at a time.
var Quiz = []Question{
	// rules: every refusal is an answer.
	{"rules", "Bola (user 2) asks to send ₦1 from Ada's account 1. What status does the transfer answer?", "not your account", 0, pickStatus,
		[]string{"201", "403", "404", "422"}, "A stranger's account and a missing one look the same: 404, so nobody learns which accounts exist.", false},
	{"rules", "Chidi's account is frozen and Chidi sends ₦1 from it. What status?", "frozen sender", 0, pickStatus,
		[]string{"400", "403", "404", "422"}, "A business rule refuses it: 422, with a machine-readable code (account_not_active).", false},
	{"rules", "Ada sends ₦1 to account 99, which does not exist. What status?", "no such recipient", 0, pickStatus,
		[]string{"201", "404", "422", "500"}, "The recipient is checked before any money moves: 422 recipient_unavailable, never a half-done transfer.", false},
	{"rules", "Ada sends 10.5 kobo. What status?", "half a kobo", 0, pickStatus,
		[]string{"201", "400", "422", "500"}, "Amounts are whole kobo: 400 invalid_amount, before the database is touched.", false},
	{"rules", "Bola, with ₦5,000, sends ₦90,000. What status?", "too much", 0, pickStatus,
		[]string{"201", "400", "409", "422"}, "The conditional debit changes no row: 422 insufficient_funds.", false},
	// the lost response.
	{"lost-response", "With no key, the first response is lost and the app retries. What is the bank's total afterwards?", "Ada ₦", 0, pickTotal,
		[]string{"₦55,000", "₦65,000", "₦75,000", "₦85,000"}, "Still ₦75,000: a transfer made twice conserves money. That is why the lab also counts transfers per intent.", false},
	{"retry-safe", "The app made one key for the intent and sent it with the transfer; the response is lost and the app retries with that key. What does attempt 2 get?", "attempt 2:", 0, pickReply,
		[]string{"201", "201 replayed", "409", "422"}, "The key is completed: the stored answer is replayed, transfer id and all.", false},
	// key misuse.
	{"key-misuse", "A transfer is sent again with its key, as the same request with its JSON fields in another order. What comes back?", "same, keys reordered", 0, pickReply,
		[]string{"201", "201 replayed", "409", "422"}, "The fingerprint ignores key order: it is the same request, so it is a replay.", false},
	{"key-misuse", "A key that has already made a transfer is sent again with another amount. What comes back?", "same key, other amount", 0, pickStatus,
		[]string{"201", "400", "409", "422"}, "A key belongs to one request: 422 idempotency_key_reused, and no money moves.", false},
	{"key-misuse", "Bola happens to send Ada's key string with his own transfer. What does he get?", "other user, same key", 0, pickReply,
		[]string{"201", "201 replayed", "404", "422"}, "Keys are scoped to the user: his key is his own, and his transfer happens.", false},
	{"key-misuse", "A transfer sent with no Idempotency-Key header. What status?", "no key", 0, pickStatus,
		[]string{"201", "400", "409", "428"}, "The key is required on endpoints that move money: 400, so a client cannot forget it.", false},
	{"key-misuse", "A transfer refused for insufficient funds is retried with the same key. What comes back?", "too much, retried", 0, pickReply,
		[]string{"201", "422", "422 replayed", "500"}, "A refusal is the request's real answer: it is stored and replayed like a success.", false},
	// concurrent copies.
	{"concurrent", "A double tap (one request sent twice at once, with one key) on a database that runs one query at a time, as the lesson's does. What does the second copy get?", "second:", 0, pickReply,
		[]string{"201", "201 replayed", "409", "422"}, "It could not even look at the key until the first copy committed; then it found the stored answer.", false},
	{"concurrent", "A double tap (one request sent twice at once, with one key) on PostgreSQL with a pool of connections. What does the second copy get?", "second:", 1, pickStatus,
		[]string{"201", "409", "422", "500"}, "It finds the key in progress while the first is inside its transaction: 409 with Retry-After.", false},
	{"concurrent", "Fifty copies of one intent at once. How do they come out?", "storm of 50 copies:", 0, pickRest,
		[]string{"201 ok x50", "201 ok x1, 409 request_in_progress x49", "201 ok x25, 409 request_in_progress x25", "409 request_in_progress x50"}, "Only one INSERT of (user, key) can succeed; the other 49 are told to retry.", false},
	// crash and locks.
	{"crash", "Server A claimed the key and went silent. A retry comes 10 s later (the lock lasts 30 s). What does it get?", "retry after 10 s:", 0, pickStatus,
		[]string{"201", "409", "422", "500"}, "The lock is still valid and A may only be slow: 409, retry later.", false},
	{"crash", "Server A claimed the key and went silent; the lock lasts 30 s. A retry comes 31 s after the claim. What does it get?", "retry after 31 s:", 0, pickStatus,
		[]string{"201", "409", "422", "500"}, "The lock has expired: the retry takes the key over with a new lock id and transfers.", false},
	{"short-lock", "A 5 s lock, a healthy request that takes 8 s, a retry at 6 s. What does the retry get?", "6 s: a retry on server B:", 0, pickStatus,
		[]string{"201", "409", "422", "500"}, "The lock expired under a healthy request: the retry takes over, and A's 8 s of work are thrown away.", false},
	{"short-lock", "A 30 s lock, a healthy request that takes 8 s, a retry at 6 s. What does the retry get?", "6 s: a retry on server B:", 1, pickStatus,
		[]string{"201", "409", "422", "500"}, "The lock outlives the request: 409. Choose the lock well above the slowest healthy request.", false},
	// the three outcomes.
	{"unknown-outcome", "The request arrived and succeeded, but the phone timed out. What does a retry with the same key get?", "case 3, Ada's ₦3,000 to Bola; retry", 0, pickReply,
		[]string{"201", "201 replayed", "409", "500"}, "The work was done: the stored answer is replayed, and money moved once.", false},
	{"unknown-outcome", "The request arrived and failed on the server (a lock timeout). What does a retry with the same key get?", "case 2, Ada's ₦2,000 to Bola; retry", 0, pickReply,
		[]string{"201", "201 replayed", "409", "500"}, "An unexpected error released the key: the retry runs the transfer now.", false},
	// the race.
	{"race", "Two transfers read Bola's ₦15,000 and both debit ₦10,000. Which SQLSTATE refuses the second debit?", "  (SQLSTATE", 0, pickSQLState,
		[]string{"23503", "23505", "23514", "40001"}, "23514: the CHECK constraint on the balance, the last line of defence.", false},
	{"race", "Two transfers of ₦10,000 from Bola's ₦15,000 at once, each the lesson's transfer (FOR UPDATE, then a conditional debit). What does the second get?", "A commits; B runs on the new balance:", 0, pickStatus,
		[]string{"201", "409", "422", "500"}, "It waited for the row, then found ₦5,000: 422 insufficient_funds.", false},
	// end to end.
	{"ledger-key", "A support tool bypasses the key store, but every ledger row carries the key under a unique index. Which SQLSTATE refuses it?", "  (SQLSTATE", 0, pickSQLState,
		[]string{"23503", "23505", "23514", "40001"}, "23505, a unique violation: the ledger's own key is the last line of defence.", false},
	{"webhook", "A provider delivers the same event twice more, at the same moment, to a handler that records nothing. What happens?", "deliveries 2 and 3 of evt_1001, at the same moment:", 0, pickRest,
		[]string{"credited x2", "ignored x2", "credited, ignored", "409 x2"}, "Nothing remembers the event: every delivery credits Bola again.", false},
	{"webhook", "The same, with the event's id recorded in the credit's transaction. What happens?", "deliveries 2 and 3 of evt_2001, at the same moment:", 0, pickRest,
		[]string{"credited x2", "ignored x2", "credited, ignored", "409 x2"}, "The event is recorded with the credit: a delivery already recorded is ignored.", true},
	{"retention", "Ada's key was deleted by a clean-up that keeps 24 hours. Her phone retries 25 hours later. What happens?", "Sep 25 11:00 Ada's phone is back and retries:", 0, pickRest,
		[]string{"201 transfer 1 (replayed)", "201 transfer 2", "409 request_in_progress", "422 idempotency_key_reused"}, "The key is gone, so the retry looks new: money moves again. Keep keys longer than the longest retry.", false},
	{"retention", "Bola's phone never saw the answer to his transfer and retries 25 hours later; keys are kept 48 hours. What happens?", "Sep 27 12:00 Bola's phone is back and retries:", 0, pickRest,
		[]string{"201 transfer 4 (replayed)", "201 transfer 5", "409 request_in_progress", "422 idempotency_key_reused"}, "The key is still there: the stored answer is replayed.", false},
	{"naive", "Ada sends ₦10,000 to account 99, which does not exist, as three statements (debit, credit, record) and no transaction. What is the bank's total afterwards?", "after:", 0, pickTotal,
		[]string{"₦55,000", "₦65,000", "₦75,000", "₦85,000"}, "The debit committed on its own and the rest failed: ₦10,000 vanished.", false},
	{"atomic", "Ada sends ₦10,000 to account 99, which does not exist, as three statements (debit, credit, record) in one transaction. What is the bank's total afterwards?", "after:", 0, pickTotal,
		[]string{"₦55,000", "₦65,000", "₦75,000", "₦85,000"}, "The failure rolls the whole transaction back, debit included.", false},
	{"http", "Over HTTP the server drops the first response after committing. What does the client's second attempt get?", "attempt 2:", 0, pickRest,
		[]string{"201 replayed: false", "201 replayed: true", "409", "network error"}, "The same key: the stored answer, with Idempotent-Replayed: true.", false},
	{"should-retry", "The lab's client sends a transfer and gets 422 back. What does it do next?", "422", 0, pickRetry,
		[]string{"it retries, with the same key", "it retries, with a new key", "it gives up and shows the refusal", "it asks GET /transfers?key= what happened"},
		"422 will fail the same way every time; 409, 429 and 5xx may succeed later.", false},
}

// Draw picks n questions, without repeats, from the quiz with seed, and
// shuffles each one's choices, so that no position is the right one more
// often than another (in the bank, the right answer is often the second).
// A sequel comes only right after the question it leans on: the two are
// drawn as one. The same seed gives the same questions with their choices
// in the same order; the bank itself is left as it is.
func Draw(seed uint64, n int) []Question {
	r := rand.New(rand.NewPCG(seed, 0x71756979))
	var units [][]int // a question with its sequels, by their places in the bank
	for i, q := range Quiz {
		if q.Sequel && len(units) > 0 {
			units[len(units)-1] = append(units[len(units)-1], i)
			continue
		}
		units = append(units, []int{i})
	}
	var idx []int
	for _, u := range r.Perm(len(units)) {
		if len(idx)+len(units[u]) <= n {
			idx = append(idx, units[u]...)
		}
	}
	out := make([]Question, len(idx))
	for i, j := range idx {
		q := Quiz[j]
		q.Options = slices.Clone(q.Options)
		r.Shuffle(len(q.Options), func(a, b int) { q.Options[a], q.Options[b] = q.Options[b], q.Options[a] })
		out[i] = q
	}
	return out
}

// Choice is the number (from 1) of answer among q's choices, or 0.
func (q Question) Choice(answer string) int {
	return slices.Index(q.Options, answer) + 1
}

// Answers runs, once each, the scenarios the questions need, and reads
// every question's answer from its transcript. It fails if a line is not
// there or an answer is not one of the options: a quiz that disagrees
// with the lab is a bug.
func Answers(ctx context.Context, clones *pgserver.Clones, qs []Question) ([]string, error) {
	transcripts := map[string]string{}
	out := make([]string, len(qs))
	for i, q := range qs {
		if _, done := transcripts[q.Scenario]; !done {
			sc, ok := scenarios.Lookup(q.Scenario)
			if !ok {
				return nil, fmt.Errorf("quiz: no scenario %q", q.Scenario)
			}
			var buf bytes.Buffer
			if _, err := lab.Run(ctx, clones, sc, lab.Options{Sink: render.Text(&buf, render.Options{Width: -1})}); err != nil {
				return nil, err
			}
			transcripts[q.Scenario] = buf.String()
		}
		var err error
		if out[i], err = q.read(transcripts[q.Scenario]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (q Question) read(transcript string) (string, error) {
	n := 0
	for _, line := range strings.Split(transcript, "\n") {
		if !strings.HasPrefix(line, q.Line) {
			continue
		}
		if n < q.Nth {
			n++
			continue
		}
		after := strings.TrimSpace(strings.TrimPrefix(line, q.Line))
		var got string
		switch q.Pick {
		case pickStatus:
			got = statusRE.FindString(after)
		case pickReply:
			got = statusRE.FindString(after)
			if strings.Contains(after, "replayed") {
				got += " replayed"
			}
		case pickSQLState:
			if m := sqlstateRE.FindStringSubmatch(line); m != nil {
				got = m[1]
			}
		case pickTotal:
			if m := totalRE.FindStringSubmatch(line); m != nil {
				got = m[1]
			}
		case pickRest:
			got = after
		case pickRetry:
			got = retrySays[after]
		}
		if !slices.Contains(q.Options, got) {
			return "", fmt.Errorf("quiz: %s printed %q for %q, which is not among the options %q", q.Scenario, got, q.Line, q.Options)
		}
		return got, nil
	}
	return "", fmt.Errorf("quiz: %s printed no line starting %q", q.Scenario, q.Line)
}

// Prediction is the learner's answer chosen to q, to be marked under the
// line of the run that answers it (bank scenario --predict).
func (q Question) Prediction(chosen string) render.Prediction {
	first := q
	first.Nth = 0
	return render.Prediction{Line: q.Line, Nth: q.Nth, Chosen: chosen, Why: q.Why, Read: first.read}
}

// QuestionsFor is the quiz's questions about one scenario, in order.
func QuestionsFor(scenario string) []Question {
	var qs []Question
	for _, q := range Quiz {
		if q.Scenario == scenario {
			qs = append(qs, q)
		}
	}
	return qs
}
