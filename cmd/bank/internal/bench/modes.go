package bench

import (
	"fmt"
	mrand "math/rand/v2"
	"sync"

	"github.com/zudojs/bank/bank/client"
)

// Mode is one way of sending transfers. Modes are told apart by value,
// never by their labels, which are only for people.
type Mode int

const (
	SQLKeyed   Mode = iota // pgbench: the keyed design in SQL alone (claim, then the transfer and the completion)
	SQLKeyless             // pgbench: the same transfer with no key
	Fresh                  // bank serve over HTTP: fresh intents
	Replays                // bank serve: every request a replay of a completed key
	Storm                  // bank serve: every request sent twice at once
	NoKey                  // bank serve with idempotency switched off (--mistake no-keys)
)

// Modes, in the order they run in each round and are reported.
var Modes = []Mode{SQLKeyed, SQLKeyless, Fresh, Replays, Storm, NoKey}

var labels = map[Mode]string{
	SQLKeyed:   "pgbench, the keyed transfer in SQL",
	SQLKeyless: "pgbench, the same transfer with no key",
	Fresh:      "fresh safe transfers",
	Replays:    "replays of completed keys",
	Storm:      "duplicate storm (each sent twice at once)",
	NoKey:      "no idempotency key",
}

func (m Mode) String() string { return labels[m] }

// pgbench: the mode runs in pgbench, not over HTTP.
func (m Mode) pgbench() bool { return m == SQLKeyed || m == SQLKeyless }

// keyed: its transfers run under keys that the server completes with 201.
func (m Mode) keyed() bool { return m == Fresh || m == Replays || m == Storm }

// serveArgs are the extra arguments of the mode's bank serve.
func (m Mode) serveArgs() []string {
	if m == NoKey {
		return []string{"--mistake", "no-keys"}
	}
	return nil
}

// requests hands out what an HTTP mode sends: a key (or none), a body,
// and how many copies at once. Replays resend requests of the fresh mode.
type requests struct {
	accounts int
	mu       sync.Mutex
	done     []sent
}

type sent struct{ key, body string }

func (q *requests) next(m Mode, r *mrand.Rand) (key, body string, copies int) {
	switch m {
	case Replays:
		q.mu.Lock()
		defer q.mu.Unlock()
		s := q.done[r.IntN(len(q.done))]
		return s.key, s.body, 1
	case Storm:
		return client.NewKey(), randomBody(r, q.accounts), 2
	case NoKey:
		return "", randomBody(r, q.accounts), 1
	}
	k, b := client.NewKey(), randomBody(r, q.accounts)
	q.mu.Lock()
	if len(q.done) < 5000 {
		q.done = append(q.done, sent{k, b})
	}
	q.mu.Unlock()
	return k, b, 1
}

// randomBody is a 1-naira transfer between two different bench accounts.
func randomBody(r *mrand.Rand, accounts int) string {
	from := 4 + r.IntN(accounts)
	to := 4 + r.IntN(accounts-1)
	if to >= from {
		to++
	}
	return fmt.Sprintf(`{"from":%d,"to":%d,"amountKobo":100}`, from, to)
}
