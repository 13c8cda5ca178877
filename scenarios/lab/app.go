package lab

import (
	"fmt"
	"net/http"
	"net/url"
	"sync"
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
	c := &client.Client{BaseURL: url, Token: "token-ada", Rand: l.Rand}
	c.HTTP = &http.Client{Transport: l.Drawn(&http.Transport{DisableKeepAlives: true}), Timeout: 30 * time.Second}
	c.Report = func(a client.Attempt) {
		l.DrawAnswer(c.BaseURL, a)
		if a.Status == 0 {
			l.Say("attempt %d: network error (%s)%s", a.N, a.Network, WillRetry(a.Retry))
		} else {
			l.Say("attempt %d: %d, %s", a.N, a.Status, replayedWords(a.Replayed))
		}
	}
	return c
}

// Lane names the server that listens at url (http://host:port) in the
// diagrams: "server" unless a story names it (two copies of a server, say).
func (l *Lab) Lane(url, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lanes == nil {
		l.lanes = map[string]string{}
	}
	l.lanes[hostOf(url)] = name
}

func (l *Lab) laneOf(url string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if name := l.lanes[hostOf(url)]; name != "" {
		return name
	}
	return actorServer
}

func hostOf(s string) string {
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		return u.Host
	}
	return s
}

// Drawn wraps an HTTP transport so that each request the app sends is
// drawn as it leaves, "POST /transfers (attempt n)", to the lane of the
// server it goes to. Its answer is drawn by DrawAnswer, once the client
// has it, so that what the server does meanwhile (its key store, drawn
// with KeysOf) falls between the two.
func (l *Lab) Drawn(next http.RoundTripper) http.RoundTripper {
	return &drawnTransport{lab: l, next: next, tries: map[string]int{}}
}

type drawnTransport struct {
	lab   *Lab
	next  http.RoundTripper
	mu    sync.Mutex
	tries map[string]int // attempts so far, per key
}

func (t *drawnTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	key := req.Header.Get("Idempotency-Key")
	t.mu.Lock()
	t.tries[key]++
	n := t.tries[key]
	t.mu.Unlock()
	t.lab.message(Event{From: ActorApp, To: t.lab.laneOf(req.URL.String()), Text: fmt.Sprintf("%s %s (attempt %d)", req.Method, req.URL.Path, n)})
	return t.next.RoundTrip(req)
}

// DrawAnswer draws the answer to one attempt of the app's client (sent to
// url), or the network error that took its place.
func (l *Lab) DrawAnswer(url string, a client.Attempt) {
	text, mark := attemptText(a.Status, a.Network, a.Replayed)
	l.message(Event{From: l.laneOf(url), To: ActorApp, Text: text, Mark: mark})
}

// WillRetry is what a client says after a failed attempt.
func WillRetry(retry bool) string {
	if retry {
		return ", will retry"
	}
	return ", giving up"
}

// replayedWords says what the Idempotent-Replayed header of an answer
// means: a stored answer sent again, or the server's own work just now.
func replayedWords(replayed bool) string {
	if replayed {
		return "replayed (the answer stored for the first attempt, sent again)"
	}
	return "not replayed (the server ran the request afresh)"
}
