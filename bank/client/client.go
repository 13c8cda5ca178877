// Package client is a transfer client that behaves the way the lesson
// says a good app does: one key per intent, reused on every retry; retry
// only what may succeed later; back off with full jitter; and when it
// gives up, say the outcome is unknown, not failed.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrOutcomeUnknown means every attempt failed in a way that says nothing
// about whether the transfer happened. Check later with Lookup.
var ErrOutcomeUnknown = errors.New("the transfer's outcome is unknown")

// ErrNotSent means every attempt was refused at the door (no server
// listened): no request left this machine, so the transfer was not made,
// and sending it again, with its key, is safe.
var ErrNotSent = errors.New("the transfer was not sent")

// Client sends transfers to one server.
type Client struct {
	BaseURL     string
	Token       string
	HTTP        *http.Client
	MaxAttempts int           // default 4
	BaseDelay   time.Duration // first backoff ceiling; default 50ms
	MaxDelay    time.Duration // largest backoff ceiling; default 5s
	Rand        *rand.Rand    // jitter; the caller seeds it
	// Sleep waits between attempts; tests and lessons pass a fake one.
	Sleep func(ctx context.Context, d time.Duration) error
	// Report hears about every attempt, as it ends.
	Report func(Attempt)
	// QuotedKey sends the key as the IETF draft writes it, an RFC 8941
	// String: Idempotency-Key: "8e03978e-…". By default it goes bare, as
	// the lesson writes it; a server of the lesson's takes both.
	QuotedKey bool
}

// Attempt is one try at sending the request.
type Attempt struct {
	N        int
	Status   int    // 0 when the network failed
	Network  string // what failed, in a stable form, when Status is 0
	Replayed bool
	Retry    bool          // another attempt follows
	Wait     time.Duration // the backoff before it
}

// Result is the answer that ended the attempts.
type Result struct {
	Status   int
	Body     []byte // at most 1 MiB of it; the server's bytes: see Printable
	Header   http.Header
	Replayed bool
	Attempts int
}

// ErrNotTheBank means an answer came that is not the transfer API's: a
// redirect (never followed), a page, a body that is not the API's JSON.
// Something else answered (a proxy, a captive portal, a wrong address),
// so it says nothing about whether the transfer happened: the outcome is
// unknown, and the intent's key must be kept to find out.
var ErrNotTheBank = errors.New("the answer is not the bank's")

// Check says whether res, the answer that ended Send, is the API's own:
// a 2xx with a JSON receipt (its transferId), or a 4xx with a JSON error
// code, each with a JSON Content-Type. Anything else is ErrNotTheBank,
// saying what came.
func (res Result) Check() error {
	if res.Status/100 == 3 {
		return redirected(res.Status, res.Header)
	}
	var receipt struct {
		TransferID *json.Number `json:"transferId"`
		Error      string       `json:"error"`
	}
	if err := bankJSON(res.Status, res.Header, res.Body, &receipt); err != nil {
		return err
	}
	switch res.Status / 100 {
	case 2:
		if receipt.TransferID != nil {
			if _, err := receipt.TransferID.Int64(); err == nil {
				return nil
			}
		}
		return fmt.Errorf("%w: %d with a body that is not the API's receipt (no transferId)", ErrNotTheBank, res.Status)
	case 4:
		if receipt.Error != "" {
			return nil
		}
		return fmt.Errorf("%w: %d with a body that is not the API's error (no error code)", ErrNotTheBank, res.Status)
	}
	return fmt.Errorf("%w: %d is no answer of the API's", ErrNotTheBank, res.Status)
}

// redirected is the error for a 3xx: the API never redirects, and the
// client never follows one (a POST must not move, and the token and the
// key must not go to another address).
func redirected(status int, h http.Header) error {
	where := ""
	if loc := h.Get("Location"); loc != "" {
		where = " to " + clip(Printable([]byte(loc)))
	}
	return fmt.Errorf("%w: a redirect (%d)%s, which the client does not follow", ErrNotTheBank, status, where)
}

// bankJSON decodes body into v when it is what the API sends: a JSON
// Content-Type and one JSON object.
func bankJSON(status int, h http.Header, body []byte, v any) error {
	ct := h.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" && mt != "application/problem+json" {
		if ct == "" {
			ct = "none"
		}
		return fmt.Errorf("%w: %d with Content-Type %s, not the API's JSON", ErrNotTheBank, status, clip(Printable([]byte(ct))))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if !json.Valid(body) || bytes.TrimSpace(body)[0] != '{' || dec.Decode(v) != nil {
		return fmt.Errorf("%w: %d with a body that is not the API's JSON", ErrNotTheBank, status)
	}
	return nil
}

// clip shortens text for a one-line message.
func clip(s string) string {
	if r := []rune(s); len(r) > 120 {
		return string(r[:120]) + "…"
	}
	return s
}

// ShouldRetry is the lesson's retry policy: network errors, 409 (in
// progress), 429 and 5xx (a 500, or a 503 while the server's database is
// out of reach) may succeed later; anything else will not.
func ShouldRetry(status int, networkErr bool) bool {
	return networkErr || status == http.StatusConflict || status == http.StatusTooManyRequests || status >= 500
}

func (c *Client) attempts() int {
	if c.MaxAttempts > 0 {
		return c.MaxAttempts
	}
	return 4
}

// Backoff is the wait before attempt n+1: full jitter, a random time
// between zero and a ceiling that doubles each attempt, but never less
// than the server's Retry-After.
func (c *Client) Backoff(n int, retryAfter time.Duration) time.Duration {
	base, max := c.BaseDelay, c.MaxDelay
	if base <= 0 {
		base = 50 * time.Millisecond
	}
	if max <= 0 {
		max = 5 * time.Second
	}
	ceiling := base << (n - 1)
	if ceiling > max || ceiling <= 0 {
		ceiling = max
	}
	var d time.Duration
	if c.Rand != nil {
		d = time.Duration(c.Rand.Int64N(int64(ceiling) + 1))
	} else {
		d = ceiling
	}
	if d < retryAfter {
		d = retryAfter
	}
	return d
}

// Send posts a transfer under key, retrying as the policy allows. The key
// must be made once per intent, before the first call, and saved with the
// intent: a retry after the app restarts must reuse it.
func (c *Client) Send(ctx context.Context, key string, body []byte) (Result, error) {
	refused := 0 // attempts refused at the door: nothing was sent
	for n := 1; ; n++ {
		res, retryAfter, netErr := c.once(ctx, key, body)
		a := Attempt{N: n, Status: res.Status, Replayed: res.Replayed}
		if netErr != nil {
			a.Network = Classify(netErr)
			if errors.Is(netErr, syscall.ECONNREFUSED) {
				refused++
			}
		}
		a.Retry = ShouldRetry(res.Status, netErr != nil) && n < c.attempts() && ctx.Err() == nil
		if a.Retry {
			a.Wait = c.Backoff(n, retryAfter)
		}
		if c.Report != nil {
			c.Report(a)
		}
		if !ShouldRetry(res.Status, netErr != nil) {
			res.Attempts = n
			return res, nil
		}
		if !a.Retry && refused == n {
			return Result{Attempts: n}, fmt.Errorf("%w: no server listened at %s (connection refused, %s): nothing left this machine, so the transfer was not made, and sending it again with its key is safe", ErrNotSent, c.BaseURL, times(n))
		}
		if !a.Retry {
			return Result{Attempts: n}, fmt.Errorf("%w after %d attempts: the transfer may or may not have happened; check with its key", ErrOutcomeUnknown, n)
		}
		if err := c.sleep(ctx, a.Wait); err != nil {
			return Result{Attempts: n}, fmt.Errorf("%w: interrupted while waiting to retry", ErrOutcomeUnknown)
		}
	}
}

// Once sends the transfer one time and returns whatever came back, a 409
// or a 5xx included (Send retries those, and calls the last an unknown
// outcome): for a caller that runs its own retries and must see every
// answer, such as bank torture. The error is the network's, when no
// answer came.
func (c *Client) Once(ctx context.Context, key string, body []byte) (Result, error) {
	res, _, err := c.once(ctx, key, body)
	res.Attempts = 1
	return res, err
}

func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	if c.Sleep != nil {
		return c.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// httpClient is the caller's client (or Go's default) that never follows
// a redirect: a 3xx comes back as the answer. Go's client would follow a
// 302 to wherever it points, as a GET, carrying the Idempotency-Key, and
// the bearer token too when only the port differs.
func (c *Client) httpClient() *http.Client {
	hc := http.Client{}
	if c.HTTP != nil {
		hc = *c.HTTP
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &hc
}

func (c *Client) once(ctx context.Context, key string, body []byte) (Result, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", c.BaseURL+"/transfers", bytes.NewReader(body))
	if err != nil {
		return Result{}, 0, err
	}
	// net/http's Transport silently re-sends a request that carries an
	// Idempotency-Key header when a reused connection fails, if it can
	// rewind the body. This client must see and count every attempt it
	// makes, so the body is made non-rewindable: the Transport then
	// reports the failure instead of retrying on its own.
	req.GetBody = nil
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Idempotency-Key", KeyField(key, c.QuotedKey))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return Result{}, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Result{}, 0, err
	}
	var retryAfter time.Duration
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		retryAfter = time.Duration(s) * time.Second
	}
	return Result{Status: resp.StatusCode, Body: b, Header: resp.Header, Replayed: resp.Header.Get("Idempotent-Replayed") == "true"}, retryAfter, nil
}

// KeyField is the Idempotency-Key header value for key: bare, or quoted
// as an RFC 8941 String (with \ and " escaped).
func KeyField(key string, quoted bool) string {
	if !quoted {
		return key
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
}

// Lookup asks the server what happened to the transfer sent under key:
// "completed" with the stored answer, "in_progress", or "unknown" when the
// server never received it (safe to send again). An answer that is not
// the API's (a redirect, a page, JSON of another shape) is ErrNotTheBank:
// it says nothing about the transfer.
func (c *Client) Lookup(ctx context.Context, key string) (state string, body []byte, err error) {
	req, err := http.NewRequestWithContext(ctx, "GET", c.BaseURL+"/transfers?key="+url.QueryEscape(key), nil)
	if err != nil {
		return "", nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return "", nil, fmt.Errorf("asking the server: %s", Classify(err))
	}
	defer resp.Body.Close()
	body, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var answer struct { // a 200's
		Status         string       `json:"status"`
		ResponseStatus *json.Number `json:"responseStatus"`
	}
	var problem struct{ Error string } // an error's (its status is a number)
	switch {
	case resp.StatusCode/100 == 3:
		return "", body, redirected(resp.StatusCode, resp.Header)
	case resp.StatusCode == http.StatusOK:
		if err := bankJSON(resp.StatusCode, resp.Header, body, &answer); err != nil {
			return "", body, err
		}
		switch {
		case answer.Status == "in_progress":
			return "in_progress", body, nil
		case answer.Status == "completed" && answer.ResponseStatus != nil:
			return "completed", body, nil
		}
		return "", body, fmt.Errorf("%w: 200 with a body that is not the API's (no status completed or in_progress)", ErrNotTheBank)
	case resp.StatusCode == http.StatusNotFound:
		// Only the lookup's own answer means "never received"; a 404 from
		// a wrong address (another server, a wrong path) says nothing.
		if bankJSON(resp.StatusCode, resp.Header, body, &problem) == nil && problem.Error == "key_not_found" {
			return "unknown", body, nil
		}
		return "", body, fmt.Errorf("%w: 404 without the API's key_not_found: %s", ErrNotTheBank, clip(Printable(bytes.TrimSpace(body))))
	}
	if err := bankJSON(resp.StatusCode, resp.Header, body, &problem); err != nil {
		return "", body, err
	}
	if problem.Error == "" {
		return "", body, fmt.Errorf("%w: %d with a body that is not the API's error (no error code)", ErrNotTheBank, resp.StatusCode)
	}
	return "", body, fmt.Errorf("the server answered %d: %s", resp.StatusCode, clip(Printable(bytes.TrimSpace(body))))
}

// Classify names a network failure in words that do not change from run
// to run (no addresses, ports or timings).
func Classify(err error) string {
	var netErr net.Error
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection closed before the response"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return "host not found"
	}
	return "network error"
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}
