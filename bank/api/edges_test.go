package api_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/bank/client"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// The server at its edges: inputs no client should send (an impossible
// key, a forged log line, a body larger than it declares) and answers a
// client might misread (a stray 404 from a lookup).

func testServer(t *testing.T, log *bytes.Buffer) *api.Server {
	pool, _ := pgtest.DB(t)
	s := &api.Server{
		Transfers: &api.Transfers{DB: pool, Keys: &idem.Store{}},
		DB:        pool, Keys: pool, Tokens: api.Tokens,
		Now: func() time.Time { return time.Date(2026, 9, 24, 10, 0, 0, 0, time.UTC) },
	}
	if log != nil {
		s.Log = log
	}
	return s
}

// TestLookupOfAnImpossibleKey: a key no transfer can have (a NUL byte,
// invalid UTF-8) is a 400 that says why, not a 500 that invites retries.
func TestLookupOfAnImpossibleKey(t *testing.T) {
	srv := testServer(t, nil)
	for _, q := range []string{"%00", "%ff", "short"} {
		req := httptest.NewRequest("GET", "/transfers?key="+q, nil)
		req.Header.Set("Authorization", "Bearer token-ada")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "invalid_key") {
			t.Errorf("key=%s: %d %s, want 400 invalid_key", q, w.Code, w.Body)
		}
	}
}

// TestLogCannotBeForged: what a client puts in the path or the key header
// reaches the log escaped, one request per line, with no control bytes.
func TestLogCannotBeForged(t *testing.T) {
	var log bytes.Buffer
	srv := testServer(t, &log)
	req := httptest.NewRequest("GET", "/x%0aPOST%20/transfers%20201%1b[31m", nil)
	req.Header.Set("Idempotency-Key", "ab\x7fcd")
	srv.ServeHTTP(httptest.NewRecorder(), req)
	line := log.String()
	if strings.Count(line, "\n") != 1 || strings.ContainsAny(strings.TrimSuffix(line, "\n"), "\n\r\x1b\x7f") {
		t.Fatalf("the request wrote its own bytes into the log: %q", line)
	}
	if !strings.Contains(line, "%0A") && !strings.Contains(line, "%0a") {
		t.Fatalf("the path is not logged escaped: %q", line)
	}
	// What is printable stays readable: a key with an ellipsis is not
	// turned into \u2026.
	log.Reset()
	req = httptest.NewRequest("GET", "/x", nil)
	req.Header.Set("Idempotency-Key", "naïve-key-0000000001")
	srv.ServeHTTP(httptest.NewRecorder(), req)
	if line := log.String(); strings.Contains(line, `\u`) || !strings.Contains(line, "naïve") {
		t.Errorf("printable text logged escaped: %q", line)
	}
}

// TestTooLargeDeclaredBodyIsRefusedBeforeReading: with Expect:
// 100-continue (curl's default for large bodies) and a Content-Length
// over the limit, the server answers 413 at once instead of asking for
// the body.
func TestTooLargeDeclaredBodyIsRefusedBeforeReading(t *testing.T) {
	ts := httptest.NewServer(testServer(t, nil))
	defer ts.Close()
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "POST /transfers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer token-ada\r\nIdempotency-Key: big-body-000000000001\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", 2<<20)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("got %d, want 413 before any body was sent", resp.StatusCode)
	}
}

// TestStatusIgnoresAStray404: only the lookup's own "key_not_found"
// means the server never received the transfer; a 404 from a wrong
// address must not tell the learner it is safe to send again.
func TestStatusIgnoresAStray404(t *testing.T) {
	stray := httptest.NewServer(http.NotFoundHandler())
	defer stray.Close()
	c := &client.Client{BaseURL: stray.URL, Token: "token-ada"}
	if st, _, err := c.Lookup(context.Background(), "some-key-0000000001"); err == nil || st == "unknown" {
		t.Fatalf("a stray 404 read as %q, %v", st, err)
	}
	real := httptest.NewServer(testServer(t, nil))
	defer real.Close()
	c.BaseURL = real.URL
	if st, _, err := c.Lookup(context.Background(), "some-key-0000000001"); err != nil || st != "unknown" {
		t.Fatalf("the lookup's own 404 read as %q, %v", st, err)
	}
}
