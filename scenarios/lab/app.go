package lab

import (
	"fmt"
	"net/http"
	"time"

	"github.com/zudojs/bank/bank/client"
)

// The app: the client side of the lessons, that a learner's phone plays,
// with one key per intent.

// NewKey makes an idempotency key the way an app does when the confirm
// screen opens: random, here from the lab's seeded source.
func (l *Lab) NewKey() string { return client.NewKeyFrom(l.Rand) }

// Phone is the app on the learner's phone: the lab's retrying client,
// aimed at url. Each attempt is drawn, and said in the transcript.
func (l *Lab) Phone(url string) *client.Client {
	return &client.Client{
		BaseURL: url, Token: "token-ada", Rand: l.Rand,
		HTTP: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second},
		Report: func(a client.Attempt) {
			l.message(Event{From: ActorApp, To: "server", Text: fmt.Sprintf("POST /transfers (attempt %d)", a.N)})
			text, mark := attemptText(a.Status, a.Network, a.Replayed)
			l.message(Event{From: "server", To: ActorApp, Text: text, Mark: mark})
			if a.Status == 0 {
				l.Say("attempt %d: network error (%s)%s", a.N, a.Network, WillRetry(a.Retry))
			} else {
				l.Say("attempt %d: %d replayed: %t", a.N, a.Status, a.Replayed)
			}
		},
	}
}

// WillRetry is what a client says after a failed attempt.
func WillRetry(retry bool) string {
	if retry {
		return ", will retry"
	}
	return ", giving up"
}
