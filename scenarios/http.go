package scenarios

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/bank/client"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
)

// The real thing: the API on a net/http server on a loopback port, and a
// client that retries as a good app does. The server loses the first
// response by closing the connection after the transfer has committed:
// the tunnel. The client made its key once and retries with it; the
// second attempt is replayed. Where Node's fetch reports a TypeError, Go
// reports the closed connection itself; the lab names it the same way on
// every run. The backoff waits are real values from a seeded jitter, spent
// on the lab's clock instead of the wall clock.
var HTTP = &lab.Scenario{
	Name:     "http",
	Summary:  "over real HTTP: the server drops the first response, the client retries with its key",
	Section:  "Over HTTP, with a retrying client",
	Prevents: "bank scenario lost-response, over real HTTP with a retrying client",
	Explain: map[string]string{
		"send over HTTP": "POST /transfers with Authorization: Bearer token-ada and an Idempotency-Key header.\nThe client retries network errors, 5xx, 409 and 429, and nothing else, waiting longer after each failure (backoff) with a random part added (jitter).",
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		lab.Intent("Ada's one tap", 1, 2, 1_000_000, 1)
		server := &api.Server{
			Transfers:  &api.Transfers{DB: lab.DB, Keys: lab.KeysOf("server", &idem.Store{})},
			DB:         lab.DB,
			Keys:       lab.DB,
			Tokens:     api.Tokens,
			Now:        lab.Clock.Now,
			LoseAnswer: theTunnel(),
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		lab.Must(err)
		hs := &http.Server{Handler: server, ReadHeaderTimeout: 5 * time.Second}
		go hs.Serve(ln)
		defer hs.Shutdown(context.WithoutCancel(ctx))

		transport := &http.Transport{}
		defer transport.CloseIdleConnections()
		app := &client.Client{
			BaseURL: "http://" + ln.Addr().String(),
			Token:   "token-ada",
			HTTP:    &http.Client{Transport: lab.Drawn(transport), Timeout: 30 * time.Second},
			Rand:    lab.Rand,
			Sleep:   func(_ context.Context, d time.Duration) error { lab.Clock.Advance(d); return nil },
		}
		app.Report = func(a client.Attempt) {
			lab.DrawAnswer(app.BaseURL, a)
			switch {
			case a.Status == 0:
				lab.Say("attempt %d: network error (%s)%s", a.N, a.Network, willRetry(a.Retry))
				lab.Say("  (the lesson's client is written in Node.js, whose fetch reports this error as a TypeError; this lab is written in Go, whose client says what happened)")
			case a.Retry:
				lab.Say("attempt %d: %d%s", a.N, a.Status, willRetry(true))
			default:
				lab.Say("attempt %d: %d replayed: %t", a.N, a.Status, a.Replayed)
				lab.Say("  (the lesson's own line: %d is the status; \"replayed: %t\" is the answer's Idempotent-Replayed header: %s)", a.Status, a.Replayed, replayedMeaning(a.Replayed))
			}
		}

		lab.Step("send over HTTP")
		lab.Say("Ada's ₦10,000 tap to Bola, over real HTTP: the API listens on a port of this machine and, as a phone that loses signal would see it, closes the connection after the transfer has committed instead of answering. The app's client made one idempotency key for the tap, and retries with it.")
		res, err := app.Send(ctx, lab.NewKey(), []byte(adaPaysBola))
		if err != nil {
			lab.Say("gave up: %v", err)
		} else {
			lab.Reply(answer(res), "app shows: %s", nodeObject(res.Body))
			lab.Say("%s", nodeObjectNote(res.Body))
		}
		lab.Balances(ctx, "")
		return nil
	},
}

// replayedMeaning says what an answer's Idempotent-Replayed header means.
func replayedMeaning(replayed bool) string {
	if replayed {
		return "this is the answer stored for attempt 1, sent again, not a second transfer"
	}
	return "the server ran the request afresh"
}

// theTunnel is the fault of the story: the tunnel drops the first answer
// (the lab's LostAnswers, as the Run's lab shadows the package).
func theTunnel() func() bool { return (&lab.LostAnswers{First: 1}).Lose }
