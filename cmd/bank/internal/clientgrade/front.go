package clientgrade

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/cmd/bank/internal/arrival"
	"github.com/zudojs/bank/scenarios/lab/procs"
)

// An attempt is one request the client sent, as the front saw it.
type attempt struct {
	N        int // 1 for the first POST of the check, and so on
	Run      int // which start of the client sent it (1, 2, …)
	Method   string
	Path     string // with its query
	Key      string // the Idempotency-Key header ("" without one)
	Keys     int    // how many Idempotency-Key lines it had
	Auth     string
	Type     string // Content-Type
	Body     string
	At       time.Time // when it arrived
	Sent     time.Time // when the kernel got it (At, where that is not known)
	Answered time.Time // when the front answered it, or closed it
	Gone     time.Time // when the client gave it up (closed the connection) before an answer
	Status   int       // what the client was answered (0: nothing)
	Did      string    // what the front did, in words
	Bank     int       // the status the bank itself answered, when it was sent to the bank
	Retry    string    // the Retry-After the client was given
	Answer   string    // the body the client was given

	// For a wait's witnessed bounds (answer: see waitSpans), where the
	// client's busy time can be read: the client's busy time when this
	// request had arrived (BusyIn) and just before its answer was written
	// (BusyOut), and when the answer had been written (Written).
	BusyIn, BusyOut procs.CPUTime
	InRead, OutRead bool // the readings were taken
	Written         time.Time
}

// A fault is what the front does with one POST /transfers.
type fault struct {
	kind   faultKind
	status int    // answer: the status thrown
	retry  string // answer: its Retry-After ("" for none)
	body   string // answer: its body
}

type faultKind int

const (
	pass      faultKind = iota // to the bank, and its answer back
	lose                       // to the bank, then the connection closed: the answer lost
	hold                       // never to the bank, never answered: held until the client gives up
	holdAfter                  // to the bank, its answer then held: the client waits on it
	answer                     // the front answers itself; the bank never sees it
	drop                       // never to the bank; the connection closed at once, unanswered
)

// front is the bank's API behind the check's fault: every POST /transfers
// goes through plan, every other request to the bank as it is.
type front struct {
	bank http.Handler
	plan func(n int, a *attempt) fault // n counts the POSTs from 1

	mu       sync.Mutex
	attempts []*attempt
	// dropOthers closes every request but a POST /transfers unanswered
	// (a lookup, say).
	dropOthers bool
	run        int // the client's current start
	// busy reads the client's busy time (procs.Child.Busy), once it runs.
	busy    func() (procs.CPUTime, bool)
	arrived chan struct{} // a signal each time an attempt arrives or ends
	done    chan struct{} // the check is over: held requests let go

	ln net.Listener
	hs *http.Server
}

func newFront(bank *api.Server, plan func(n int, a *attempt) fault) (*front, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &front{bank: bank, plan: plan, ln: ln, arrived: make(chan struct{}, 1), done: make(chan struct{})}
	if plan == nil {
		f.plan = func(int, *attempt) fault { return fault{} }
	}
	f.hs = &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	arrival.Start(f.hs, ln)
	return f, nil
}

// URL is the front's address, BANK_URL.
func (f *front) URL() string { return "http://" + f.ln.Addr().String() }

func (f *front) close() {
	close(f.done)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	f.hs.Shutdown(ctx)
	f.hs.Close()
}

// signal wakes a waiter on the attempts.
func (f *front) signal() {
	select {
	case f.arrived <- struct{}{}:
	default:
	}
}

// all is a copy of the attempts so far.
func (f *front) all() []attempt {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]attempt, len(f.attempts))
	for i, a := range f.attempts {
		out[i] = *a
	}
	return out
}

// posts is the POST /transfers attempts so far.
func (f *front) posts() []attempt {
	var out []attempt
	for _, a := range f.all() {
		if a.Method == http.MethodPost {
			out = append(out, a)
		}
	}
	return out
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sent, stamped := arrival.Of(r) // its head's, before the body is read
	busyIn, inRead := f.busyNow()
	body := new(strings.Builder)
	if r.Body != nil {
		_, _ = copyAtMost(body, r.Body, 64<<10)
	}
	a := &attempt{Method: r.Method, Path: r.URL.RequestURI(), Key: r.Header.Get("Idempotency-Key"),
		Keys: len(r.Header.Values("Idempotency-Key")), Auth: r.Header.Get("Authorization"),
		Type: r.Header.Get("Content-Type"), Body: body.String(), At: time.Now(),
		BusyIn: busyIn, InRead: inRead}
	a.Sent = a.At
	if stamped && sent.Before(a.At) {
		a.Sent = sent
	}
	f.mu.Lock()
	a.Run = f.run
	f.attempts = append(f.attempts, a)
	post := r.Method == http.MethodPost && r.URL.Path == "/transfers"
	dropped := !post && f.dropOthers
	n := 0
	if post {
		for _, b := range f.attempts {
			if b.Method == http.MethodPost {
				n++
			}
		}
		a.N = n
	}
	f.mu.Unlock()
	f.signal()
	defer f.signal()

	flt := fault{}
	switch {
	case post:
		flt = f.plan(n, a)
	case dropped:
		flt = fault{kind: drop}
	}
	r.Body = readCloser{strings.NewReader(body.String())}
	switch flt.kind {
	case answer:
		h := w.Header()
		h.Set("Content-Type", "application/json")
		if flt.retry != "" {
			h.Set("Retry-After", flt.retry)
		}
		f.note(a, func() {
			a.Status, a.Retry, a.Answered, a.Did = flt.status, flt.retry, time.Now(), "answered "+strconv.Itoa(flt.status)+retryWords(flt.retry)+" itself"
			a.Answer = flt.body
		})
		h.Set("Content-Length", strconv.Itoa(len(flt.body)))
		busyOut, outRead := f.busyNow()
		w.WriteHeader(flt.status)
		fmt.Fprint(w, flt.body)
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush() // on its way to the client: then Written
		}
		f.note(a, func() { a.BusyOut, a.OutRead, a.Written = busyOut, outRead, time.Now() })
		return
	case drop:
		f.note(a, func() { a.Answered, a.Did = time.Now(), "closed unanswered (not sent to the bank)" })
		closeConn(w)
		return
	case hold:
		f.note(a, func() { a.Did = "held, unanswered" })
		f.holdUntilGone(w, r, a)
		return
	}
	rec := httptest.NewRecorder()
	f.bank.ServeHTTP(rec, r)
	switch flt.kind {
	case lose:
		f.note(a, func() {
			a.Bank, a.Answered, a.Did = rec.Code, time.Now(), fmt.Sprintf("sent to the bank (%d), the answer lost: connection closed", rec.Code)
		})
		closeConn(w)
		return
	case holdAfter:
		f.note(a, func() { a.Bank, a.Did = rec.Code, fmt.Sprintf("sent to the bank (%d), the answer held back", rec.Code) })
		f.holdUntilGone(w, r, a)
		return
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	f.note(a, func() {
		a.Bank, a.Status, a.Retry, a.Answered, a.Answer = rec.Code, rec.Code, rec.Header().Get("Retry-After"), time.Now(), rec.Body.String()
		a.Did = fmt.Sprintf("sent to the bank, its answer %d passed on", rec.Code)
	})
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
}

// busyNow reads the client's busy time, where it can be read.
func (f *front) busyNow() (procs.CPUTime, bool) {
	f.mu.Lock()
	busy := f.busy
	f.mu.Unlock()
	if busy == nil {
		return procs.CPUTime{}, false
	}
	return busy()
}

// note changes an attempt under the lock.
func (f *front) note(a *attempt, change func()) {
	f.mu.Lock()
	change()
	f.mu.Unlock()
	f.signal()
}

// holdUntilGone answers nothing until the client gives the request up (it
// closes the connection) or the check ends; then the connection closes.
func (f *front) holdUntilGone(w http.ResponseWriter, r *http.Request, a *attempt) {
	select {
	case <-r.Context().Done():
		f.note(a, func() { a.Gone = time.Now() })
	case <-f.done:
	}
	closeConn(w)
}

// closeConn closes the connection under w without an answer.
func closeConn(w http.ResponseWriter) {
	if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
		c.Close()
	}
}

func retryWords(retry string) string {
	if retry == "" {
		return ""
	}
	return " (Retry-After: " + retry + ")"
}

// waitFor waits until cond holds of the attempts, or the bound passes or
// the client exits (exited closed); it reports whether cond held.
func (f *front) waitFor(bound time.Duration, exited <-chan struct{}, cond func([]attempt) bool) bool {
	timer := time.NewTimer(bound)
	defer timer.Stop()
	for {
		if cond(f.all()) {
			return true
		}
		select {
		case <-f.arrived:
		case <-exited:
			return cond(f.all())
		case <-timer.C:
			return cond(f.all())
		}
	}
}
