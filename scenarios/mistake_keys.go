package scenarios

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
)

// NewKeyPerAttempt: the client makes a new key for every attempt, so every
// retry looks new to the server, exactly as if there were no keys.
var NewKeyPerAttempt = &Mistake{
	Name:    "new-key-per-attempt",
	Summary: "a new key for every attempt",
	Happens: "every retry looks new; a lost response leads to two transfers",
	Fix:     "one key per intent, made before the first attempt and reused on every retry",
	Steps: func(ctx context.Context, lab *Lab, broken bool) error {
		lab.Intent("Ada's one tap", 1, 2, 1_000_000, 1).BrokenIf(broken)
		h := &api.Transfers{DB: lab.DB, Keys: &idem.Store{}}
		lab.Step("a lost response, then a retry")
		key := newKey(lab)
		for attempt := 1; attempt <= 2; attempt++ {
			if broken {
				key = newKey(lab) // BROKEN ON PURPOSE: the key is made per attempt
			}
			r, err := h.Handle(ctx, api.Call{UserID: 1, Key: key, Body: []byte(adaPaysBola), Now: lab.Clock.Now()})
			if err != nil {
				return err
			}
			if attempt == 1 {
				lab.Say("attempt 1: %v", errLostResponse)
				continue
			}
			lab.Reply(r, "attempt 2: %d %s%s", r.Status, transferLabel(r.Body), replayedNote(r.Replayed))
		}
		return lab.Balances(ctx, "")
	},
}

// UnscopedKeys: keys stored without their user. Another user who happens
// to send the same key string gets the first user's stored answer (her
// transfer, her balance), and his own transfer never happens.
var UnscopedKeys = &Mistake{
	Name:    "unscoped-keys",
	Summary: "keys not scoped to the user",
	Happens: "another user sending the same key string gets the first user's stored response",
	Fix:     "keys stored under (user, key): Bola's key is his own",
	Steps: func(ctx context.Context, lab *Lab, broken bool) error {
		lab.Intent("Ada's ₦10,000", 1, 2, 1_000_000, 1)
		lab.Intent("Bola's ₦1,000", 2, 1, 100_000, 1).BrokenIf(broken)
		var h api.Handler = &api.Transfers{DB: lab.DB, Keys: &idem.Store{}}
		if broken {
			h = &storedKeys{db: lab.DB, mistake: unscoped}
		}
		lab.Step("two users, one key string")
		for _, c := range []struct {
			who  string
			user int64
			body string
		}{{"Ada", 1, adaPaysBola}, {"Bola", 2, `{"from": 2, "to": 1, "amountKobo": 100000}`}} {
			r, err := h.Handle(ctx, api.Call{UserID: c.user, Key: "tap-2026-09-24-0001", Body: []byte(c.body), Now: lab.Clock.Now()})
			if err != nil {
				return err
			}
			lab.Reply(r, "%s sends key tap-2026-09-24-0001: %d%s %s", c.who, r.Status, replayedNote(r.Replayed), r.Body)
		}
		return lab.Balances(ctx, "")
	},
}

// NoFingerprint: the key is reused with a different amount, and the
// server, not comparing requests, replays the first answer: the app is
// told a ₦50,000 transfer succeeded when none was made.
var NoFingerprint = &Mistake{
	Name:    "no-fingerprint",
	Summary: "ignoring the request fingerprint",
	Happens: "a key reused for a different amount is told the earlier transfer succeeded",
	Fix:     "the request's fingerprint is stored with the key; a different request gets 422",
	Steps: func(ctx context.Context, lab *Lab, broken bool) error {
		lies := 0
		lab.Intent("Ada's ₦10,000", 1, 2, 1_000_000, 1)
		lab.Effect("a success reported for the ₦50,000 request", 0, func(context.Context) (int, error) { return lies, nil }).BrokenIf(broken)
		var h api.Handler = &api.Transfers{DB: lab.DB, Keys: &idem.Store{}}
		if broken {
			h = &storedKeys{db: lab.DB, mistake: noFingerprint}
		}
		lab.Step("one key, two amounts")
		for _, body := range []string{adaPaysBola, `{"from": 1, "to": 2, "amountKobo": 5000000}`} {
			r, err := h.Handle(ctx, api.Call{UserID: 1, Key: "tap-2026-09-24-0001", Body: []byte(body), Now: lab.Clock.Now()})
			if err != nil {
				return err
			}
			if strings.HasSuffix(body, ": 5000000}") && r.Status/100 == 2 {
				lies++
			}
			lab.Reply(r, "%-42s %d%s %s", body, r.Status, replayedNote(r.Replayed), transferLabel(r.Body))
		}
		return lab.Balances(ctx, "")
	},
}

// MemoryKeys: keys kept in a map inside the server process. Played with
// real bank serve processes: the server restarts between two attempts,
// and then two copies of the server share one database while the retry
// lands on the other copy. Either way the key is not there.
var MemoryKeys = &Mistake{
	Name:    "memory-keys",
	Summary: "keys in a map in memory",
	Happens: "lost on restart, and not shared with the other copies of the server",
	Fix:     "keys in PostgreSQL, shared by every copy of the server and kept across restarts",
	Explain: map[string]string{
		"the server restarts":      "bank serve loses the first response; during the client's backoff the server restarts.",
		"two copies of the server": "Two bank serve processes on two ports share the bank; the retry goes to the other one.",
	},
	Steps: func(ctx context.Context, lab *Lab, broken bool) error {
		mode := []string{}
		if broken {
			mode = []string{"--break", "memory-keys"} // BROKEN ON PURPOSE
		}
		lab.Intent("Ada's ₦10,000 tap", 1, 2, 1_000_000, 1).BrokenIf(broken)
		lab.Intent("Ada's ₦5,000 tap", 1, 2, 500_000, 1).BrokenIf(broken)

		lab.Step("the server restarts")
		first, err := lab.Serve(ctx, append(mode, "--lose-responses", "1")...)
		if err != nil {
			return err
		}
		app := appClient(lab, first.Addr)
		app.Sleep = func(ctx context.Context, d time.Duration) error {
			port := first.Addr[len("http://127.0.0.1:"):]
			if err := first.Stop(); err != nil && !isSignal(err) {
				return err
			}
			second, err := lab.Serve(ctx, append(mode, "--addr", "127.0.0.1:"+port)...)
			if err != nil {
				return err
			}
			first = second
			lab.Say("the server restarted")
			return nil
		}
		if err := sendAndShow(ctx, lab, app, adaPaysBola); err != nil {
			return err
		}

		lab.Step("two copies of the server")
		one, err := lab.Serve(ctx, append(mode, "--lose-responses", "1")...)
		if err != nil {
			return err
		}
		two, err := lab.Serve(ctx, mode...)
		if err != nil {
			return err
		}
		app = appClient(lab, one.Addr)
		app.Sleep = func(context.Context, time.Duration) error {
			app.BaseURL = two.Addr
			lab.Say("the load balancer sends the retry to the other copy")
			return nil
		}
		if err := sendAndShow(ctx, lab, app, `{"from": 1, "to": 2, "amountKobo": 500000}`); err != nil {
			return err
		}
		return lab.Balances(ctx, "")
	},
}

func isSignal(err error) bool {
	var exit interface{ ExitCode() int }
	return errors.As(err, &exit)
}
