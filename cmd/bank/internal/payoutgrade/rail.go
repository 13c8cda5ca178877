package payoutgrade

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/arrival"
)

// The rail, as the grader plays it: it pays a reference once, answers a
// reference it has seen with 409, and says what became of one (GET
// /payouts/REFERENCE). Each worker process talks to it through a door of
// its own, so that the record says which worker sent what. A check's plan
// throws one fault at a request.

// faultKind is what the rail does with one POST.
type faultKind int

const (
	pass    faultKind = iota
	lose              // pays, then closes the connection without a word
	fail500           // pays, then answers 500
	down              // pays nothing: 503
	refuse            // pays nothing: 422
)

// call is one request the rail got.
type call struct {
	Door      int // which worker's door
	Method    string
	Reference string
	Account   int64
	Kobo      int64
	At        time.Time // when it came
	Sent      time.Time // when the kernel got it (At, where that cannot be read)
	Answered  time.Time // when it was answered, or the connection closed
	Status    int       // what was answered (0: nothing)
	Paid      bool      // this request made the payment
	Did       string    // in words
}

// payment is one reference the rail has paid.
type payment struct {
	Account, Kobo int64
	Door          int
}

// rail is the fake payment rail of one check.
type rail struct {
	mu    sync.Mutex
	paid  map[string]payment
	calls []call
	// plan decides the fault for a POST: n counts the POSTs of its
	// amount (a row's) from 1.
	plan  func(c call, n int) faultKind
	doors []*door
	// latency is how long each payout takes the rail, before it is paid.
	latency time.Duration
}

// door is one worker's way into the rail.
type door struct {
	n  int
	r  *rail
	ln net.Listener
	hs *http.Server
}

func newRail(plan func(c call, n int) faultKind) *rail {
	if plan == nil {
		plan = func(call, int) faultKind { return pass }
	}
	return &rail{paid: map[string]payment{}, plan: plan}
}

// open makes a new door, for one more worker, and returns its URL.
func (r *rail) open() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	d := &door{n: len(r.doors) + 1, r: r, ln: ln}
	d.hs = &http.Server{Handler: d, ReadHeaderTimeout: 10 * time.Second}
	arrival.Start(d.hs, ln)
	r.doors = append(r.doors, d)
	return "http://" + ln.Addr().String(), nil
}

func (r *rail) close() {
	for _, d := range r.doors {
		d.hs.Close()
	}
}

var referenceForm = regexp.MustCompile(`^[A-Za-z0-9_-]{8,64}$`)

func (d *door) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r := d.r
	c := call{Door: d.n, Method: req.Method, At: time.Now()}
	c.Sent = c.At
	if at, ok := arrival.Of(req); ok && at.Before(c.At) {
		c.Sent = at
	}
	answer := func(status int, body any) {
		c.Status, c.Answered = status, time.Now()
		r.mu.Lock()
		r.calls = append(r.calls, c)
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(body)
	}
	switch {
	case req.Method == http.MethodGet && strings.HasPrefix(req.URL.Path, "/payouts/"):
		c.Reference = strings.TrimPrefix(req.URL.Path, "/payouts/")
		r.mu.Lock()
		p, ok := r.paid[c.Reference]
		r.mu.Unlock()
		if !ok {
			c.Did = "asked: not found"
			answer(404, map[string]string{"error": "not_found"})
			return
		}
		c.Did, c.Account, c.Kobo = "asked: paid", p.Account, p.Kobo
		answer(200, map[string]any{"reference": c.Reference, "status": "paid", "account": p.Account, "amountKobo": p.Kobo})
		return
	case req.Method != http.MethodPost || req.URL.Path != "/payouts":
		c.Did = "not the rail's API: " + req.Method + " " + req.URL.Path
		answer(404, map[string]string{"error": "not_found"})
		return
	}
	var body struct {
		Reference  string `json:"reference"`
		Account    int64  `json:"account"`
		AmountKobo int64  `json:"amountKobo"`
	}
	raw, _ := io.ReadAll(io.LimitReader(req.Body, 64<<10))
	if json.Unmarshal(raw, &body) != nil || !referenceForm.MatchString(body.Reference) || body.Account <= 0 || body.AmountKobo <= 0 {
		c.Did = "refused: not the rail's body"
		answer(422, map[string]string{"error": "invalid_payout"})
		return
	}
	c.Reference, c.Account, c.Kobo = body.Reference, body.Account, body.AmountKobo
	r.mu.Lock()
	n := 1
	for _, o := range r.calls {
		if o.Method == http.MethodPost && o.Kobo == c.Kobo && o.Account == c.Account {
			n++
		}
	}
	kind := r.plan(c, n)
	r.mu.Unlock()
	switch kind {
	case down:
		c.Did = "rail down: 503"
		answer(503, map[string]string{"error": "unavailable"})
		return
	case refuse:
		c.Did = "refused: 422"
		answer(422, map[string]string{"error": "account_closed"})
		return
	}
	time.Sleep(r.latency)
	r.mu.Lock()
	_, seenBefore := r.paid[c.Reference]
	if !seenBefore {
		r.paid[c.Reference] = payment{Account: c.Account, Kobo: c.Kobo, Door: d.n}
	}
	r.mu.Unlock()
	if seenBefore {
		c.Did = "a reference paid before: 409"
		answer(409, map[string]string{"error": "duplicate_reference"})
		return
	}
	c.Paid = true
	switch kind {
	case lose:
		c.Did, c.Answered = "paid, the answer lost: connection closed", time.Now()
		r.mu.Lock()
		r.calls = append(r.calls, c)
		r.mu.Unlock()
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	case fail500:
		c.Did = "paid, then answered 500"
		answer(500, map[string]string{"error": "internal_error"})
	default:
		c.Did = "paid: 201"
		answer(201, map[string]string{"reference": c.Reference, "status": "paid"})
	}
}

// log is every call so far, in order.
func (r *rail) log() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

// forRow is the calls of one row: the POSTs of its amount, and every
// GET of a reference one of them carried.
func forRow(calls []call, kobo int64) []call {
	refs := map[string]bool{}
	var out []call
	for _, c := range calls {
		if c.Method == http.MethodPost && c.Kobo == kobo {
			refs[c.Reference] = true
		}
	}
	for _, c := range calls {
		if c.Method == http.MethodPost && c.Kobo == kobo || c.Method == http.MethodGet && refs[c.Reference] {
			out = append(out, c)
		}
	}
	return out
}

func (c call) String() string {
	what := c.Method + " " + c.Reference
	if c.Method == http.MethodPost {
		what = fmt.Sprintf("POST %s (₦%d)", c.Reference, c.Kobo/100)
	}
	return fmt.Sprintf("worker %d: %s: %s", c.Door, what, c.Did)
}

// onRail is how long, between from and to, one request of calls or more
// was at the rail: sent, and not yet answered. A worker waits on the rail
// then, asleep, however slow a busy machine makes the rail's answer.
func onRail(calls []call, from, to time.Time) time.Duration {
	type span struct{ from, to time.Time }
	var spans []span
	for _, c := range calls {
		s := span{c.Sent, c.Answered}
		if s.from.Before(from) {
			s.from = from
		}
		if s.to.After(to) {
			s.to = to
		}
		if s.from.Before(s.to) {
			spans = append(spans, s)
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return a.from.Compare(b.from) })
	var sum time.Duration
	var end time.Time
	for _, s := range spans {
		if s.from.Before(end) {
			s.from = end
		}
		if s.from.Before(s.to) {
			sum += s.to.Sub(s.from)
			end = s.to
		}
	}
	return sum
}
