// The lesson's app sending one transfer, under the client rules of
// bank grade client --contract: one key per intent, kept with a draft in
// DRAFTS; retries of what may succeed later (no answer, 409, 429, 5xx) under
// that key, with exponential backoff, jitter and Retry-After; at most 10
// attempts within 60 s; then GET /transfers?key= before saying unknown.
//
//	go build -o client . && bank grade client -- ./client
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

const (
	maxAttempts = 10
	budget      = 55 * time.Second // the contract's 60 s, with room for the lookup
	baseWait    = 50 * time.Millisecond
	maxWait     = 2 * time.Second
)

var start = time.Now()

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%6dms] "+format+"\n", append([]any{time.Since(start).Milliseconds()}, args...)...)
}

// report prints the outcome as the contract wants it, a last line, and
// exits with its status.
func report(outcome map[string]any, code int) {
	line, _ := json.Marshal(outcome)
	fmt.Println(string(line))
	os.Exit(code)
}

// draft is what the app keeps on disk for one intent.
type draft struct {
	Key      string          `json:"key"`
	Transfer json.RawMessage `json:"transfer"`
	Finished bool            `json:"finished"`
	Outcome  json.RawMessage `json:"outcome,omitempty"`
}

func draftPath() string {
	dir := os.Getenv("DRAFTS")
	if dir == "" {
		dir = "."
	}
	return filepath.Join(dir, "draft.json")
}

// saveDraft writes the draft durably: a temporary file, fsynced, renamed
// over the old one, and the folder fsynced.
func saveDraft(d draft) error {
	path := draftPath()
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.Marshal(d)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".draft-*.tmp")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if f, err := os.Open(dir); err == nil {
		f.Sync()
		f.Close()
	}
	return nil
}

// loadDraft returns the unfinished draft in DRAFTS, if there is one.
func loadDraft() (draft, bool) {
	data, err := os.ReadFile(draftPath())
	if err != nil {
		return draft{}, false
	}
	var d draft
	if err := json.Unmarshal(data, &d); err != nil || d.Finished || d.Key == "" || len(d.Transfer) == 0 {
		return draft{}, false
	}
	return d, true
}

func newKey() string {
	random := make([]byte, 16)
	if _, err := rand.Read(random); err != nil {
		fmt.Fprintln(os.Stderr, "no randomness:", err)
		os.Exit(2)
	}
	return hex.EncodeToString(random)
}

// finish marks the draft finished (made or refused), then reports.
func finish(d draft, outcome map[string]any, code int) {
	d.Finished = true
	d.Outcome, _ = json.Marshal(outcome)
	if err := saveDraft(d); err != nil {
		logf("could not mark the draft finished: %v", err)
	}
	report(outcome, code)
}

// answer is the bank's JSON body: a transfer, or an error (the lesson's
// {"error","message"} or RFC 9457 problem details).
type answer struct {
	TransferID json.Number `json:"transferId"`
	ID         json.Number `json:"id"`
	Error      string      `json:"error"`
	Message    string      `json:"message"`
	Title      string      `json:"title"`
	Detail     string      `json:"detail"`
	Type       string      `json:"type"`
}

func (a answer) reason() string {
	for _, s := range []string{a.Error, a.Message, a.Title, a.Detail, a.Type} {
		if s != "" {
			return s
		}
	}
	return ""
}

func (a answer) transferID() (any, bool) {
	for _, n := range []json.Number{a.TransferID, a.ID} {
		if n == "" {
			continue
		}
		if i, err := n.Int64(); err == nil {
			return i, true
		}
		return n, true
	}
	return nil, false
}

func parseAnswer(body []byte) answer {
	var a answer
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.UseNumber()
	dec.Decode(&a)
	return a
}

// retryAfter reads Retry-After: a number of seconds, or an HTTP date.
func retryAfter(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return time.Until(t)
	}
	return 0
}

// backoff is the wait after the n-th failure (n from 1): 50, 100, 200 ms …
// capped, plus a random part as large as the base (jitter), and never
// sooner than Retry-After.
func backoff(n int, ra time.Duration) time.Duration {
	base := baseWait << (n - 1)
	if base > maxWait || base <= 0 {
		base = maxWait
	}
	wait := base + time.Duration(mrand.Int64N(int64(base)+1))
	if ra > 0 && wait < ra {
		// honour Retry-After, still with a random part so that clients
		// told the same thing do not all come back at once
		wait = ra + time.Duration(mrand.Int64N(int64(base)+1))
	}
	return wait
}

func main() {
	base, token, body := os.Getenv("BANK_URL"), os.Getenv("BANK_TOKEN"), os.Getenv("TRANSFER")
	base = strings.TrimRight(base, "/")
	ms, err := strconv.Atoi(os.Getenv("ATTEMPT_TIMEOUT_MS"))
	if err != nil || ms <= 0 {
		ms = 1000
	}
	attemptTimeout := time.Duration(ms) * time.Millisecond
	client := &http.Client{}

	// The key belongs to the intent, and is kept with the draft: an
	// unfinished draft is this same intent after a restart.
	d, found := loadDraft()
	if found {
		logf("resuming the unfinished draft: key %s, transfer %s", d.Key, d.Transfer)
	} else {
		if !json.Valid([]byte(body)) {
			fmt.Fprintln(os.Stderr, "TRANSFER is not JSON:", body)
			os.Exit(2)
		}
		d = draft{Key: newKey(), Transfer: json.RawMessage(body)}
		if err := saveDraft(d); err != nil {
			// without a draft a restart would send a new key: do not send
			fmt.Fprintln(os.Stderr, "could not save the draft:", err)
			os.Exit(2)
		}
		logf("new intent: key %s, draft saved", d.Key)
	}

	deadline := start.Add(budget)
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		status, hdr, resBody, err := send(client, attemptTimeout, deadline, base, token, d)
		var ra time.Duration
		switch {
		case err != nil:
			logf("attempt %d: no answer: %v", attempt, err)
		case status >= 200 && status < 300:
			a := parseAnswer(resBody)
			id, ok := a.transferID()
			if !ok {
				logf("attempt %d: %d without a transfer id: %s", attempt, status, resBody)
				lookupOrUnknown(client, attemptTimeout, base, token, d)
			}
			logf("attempt %d: %d, transfer %v", attempt, status, id)
			finish(d, map[string]any{"outcome": "made", "transferId": id}, 0)
		case status == 409 || status == 429 || status >= 500:
			ra = retryAfter(hdr)
			logf("attempt %d: %d (Retry-After %q): may succeed later", attempt, status, hdr.Get("Retry-After"))
		default:
			// 400, 422 and every other 4xx (and anything unexpected):
			// the same request fails the same way
			a := parseAnswer(resBody)
			logf("attempt %d: %d, refused: %s", attempt, status, resBody)
			finish(d, map[string]any{"outcome": "refused", "status": status, "error": a.reason()}, 3)
		}
		if attempt == maxAttempts {
			break
		}
		wait := backoff(attempt, ra)
		if time.Now().Add(wait).Add(attemptTimeout).After(deadline) {
			logf("no time left for another attempt within the budget")
			break
		}
		logf("waiting %v", wait.Round(time.Millisecond))
		time.Sleep(wait)
	}
	lookupOrUnknown(client, attemptTimeout, base, token, d)
}

// send makes one attempt: the same key and body every time.
func send(client *http.Client, timeout time.Duration, deadline time.Time, base, token string, d draft) (int, http.Header, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/transfers", strings.NewReader(string(d.Transfer)))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", d.Key)
	res, err := client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		// the answer was cut off: no answer
		return 0, nil, nil, fmt.Errorf("reading the answer: %w", err)
	}
	return res.StatusCode, res.Header, data, nil
}

// lookupOrUnknown asks GET /transfers?key= what became of the intent: a
// completed stored answer says made or refused; anything else is unknown,
// and the draft stays unfinished.
func lookupOrUnknown(client *http.Client, timeout time.Duration, base, token string, d draft) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/transfers?key="+url.QueryEscape(d.Key), nil)
	if err == nil {
		req.Header.Set("Authorization", "Bearer "+token)
		var res *http.Response
		res, err = client.Do(req)
		if err == nil {
			data, rerr := io.ReadAll(res.Body)
			res.Body.Close()
			err = rerr
			if err == nil {
				logf("lookup: %d %s", res.StatusCode, data)
				if res.StatusCode == 200 {
					var stored struct {
						Status         string          `json:"status"`
						ResponseStatus int             `json:"responseStatus"`
						ResponseBody   json.RawMessage `json:"responseBody"`
					}
					if json.Unmarshal(data, &stored) == nil && stored.Status == "completed" {
						rb := []byte(stored.ResponseBody)
						var inner string
						if json.Unmarshal(rb, &inner) == nil {
							rb = []byte(inner) // the stored body kept as a JSON string
						}
						a := parseAnswer(rb)
						switch s := stored.ResponseStatus; {
						case s >= 200 && s < 300:
							if id, ok := a.transferID(); ok {
								finish(d, map[string]any{"outcome": "made", "transferId": id}, 0)
							}
						case s >= 400 && s < 500 && s != 409 && s != 429:
							finish(d, map[string]any{"outcome": "refused", "status": s, "error": a.reason()}, 3)
						}
					}
				}
			}
		}
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		logf("lookup: no answer: %v", err)
	}
	report(map[string]any{"outcome": "unknown"}, 4)
}
