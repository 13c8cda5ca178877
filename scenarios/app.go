package scenarios

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/zudojs/bank/bank/client"
)

// The lab's app: the client side of the lessons that a learner's phone
// plays, with one key per intent.

// adaPaysBola is the lesson's request: Ada sends Bola ₦10,000.
const adaPaysBola = `{"from": 1, "to": 2, "amountKobo": 1000000}`

// newKey makes an idempotency key the way an app does when the confirm
// screen opens: random, here from the lab's seeded source.
func newKey(lab *Lab) string {
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", lab.Rand.Uint32(), lab.Rand.Uint32()&0xffff,
		lab.Rand.Uint32()&0xfff, 0x8000|lab.Rand.Uint32()&0x3fff, lab.Rand.Uint64()&0xffffffffffff)
}

// appClient is the lab's retrying app, aimed at url.
func appClient(lab *Lab, url string) *client.Client {
	return &client.Client{
		BaseURL: url, Token: "token-ada", Rand: lab.Rand,
		HTTP: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second},
		Report: func(a client.Attempt) {
			lab.message(Event{From: actorApp, To: "server", Text: fmt.Sprintf("POST /transfers (attempt %d)", a.N)})
			text, mark := attemptText(a.Status, a.Network, a.Replayed)
			lab.message(Event{From: "server", To: actorApp, Text: text, Mark: mark})
			if a.Status == 0 {
				lab.Say("attempt %d: network error (%s)%s", a.N, a.Network, willRetry(a.Retry))
			} else {
				lab.Say("attempt %d: %d replayed: %t", a.N, a.Status, a.Replayed)
			}
		},
	}
}

func sendAndShow(ctx context.Context, lab *Lab, app *client.Client, body string) error {
	res, err := app.Send(ctx, newKey(lab), []byte(body))
	if err != nil {
		return err
	}
	lab.Reply(answer(res), "app shows: %s", transferLabel(res.Body))
	return nil
}
