package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
)

// The client's tests against servers that are not the bank: bank send and
// bank status must not let a server's bytes drive the terminal, must not
// follow a redirect (nor carry the token or the key elsewhere), and must
// say "unknown", keeping the draft, when what answered is not the bank.

// Escape sequences a server could send to a terminal.
const (
	setTitle    = "\x1b]0;bank: all good\x07"
	toClipboard = "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07"
	clearScreen = "\x1b[2J\x1b[H"
	c1CSI       = "\u009b2J" // the 8-bit CSI, valid unescaped in JSON
)

// jsonString is s as a JSON string, its controls escaped as JSON requires
// (the C1 ones, which it does not, are left raw).
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return strings.ReplaceAll(string(b), `\u009b`, "\u009b")
}

// obeyedIn names what in out a terminal would act on: a character that is
// not graphic (but a line feed), or a byte that is not UTF-8.
func obeyedIn(out string) string {
	for i, r := range out {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(out[i:], "\uFFFD"):
			return fmt.Sprintf("the byte %#x", out[i])
		case r != '\n' && !unicode.IsGraphic(r):
			return fmt.Sprintf("%U", r)
		}
	}
	return ""
}

func TestSendAndStatusNeverWriteAServersEscapes(t *testing.T) {
	t.Parallel()
	for _, attack := range []struct{ name, seq string }{
		{"title", setTitle},
		{"clipboard", toClipboard},
		{"clear screen", clearScreen + "All good: transfer made\n"},
		{"C1 CSI", c1CSI},
	} {
		t.Run(attack.name, func(t *testing.T) {
			t.Parallel()
			message := jsonString(attack.seq + "₦10,000 to Bola")
			// A refusal whose message carries the sequence, a receipt
			// with it in a field, and a lookup of a completed key whose
			// stored body carries it.
			refusal := `{"error":"insufficient_funds","message":` + message + `}`
			receipt := `{"transferId":7,"from":1,"to":2,"amountKobo":100,"balanceKobo":100,"note":` + message + `}`
			lookup := `{"key":"k","status":"completed","responseStatus":201,"responseBody":` + receipt + `}`
			refuse := true
			var mu sync.Mutex
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case r.Method == "GET":
					w.Header().Set("Content-Type", "application/json")
					w.Write([]byte(lookup))
				case refuse:
					w.Header().Set("Content-Type", "application/problem+json")
					w.WriteHeader(422)
					w.Write([]byte(refusal))
				default:
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(201)
					w.Write([]byte(receipt))
				}
			}))
			defer srv.Close()
			state := filepath.Join(t.TempDir(), "draft.json")
			send := func(args ...string) result {
				return cli(t, nil, append([]string{"send", "--server", srv.URL, "--state", state, "--from", "1", "--to", "2", "--amount-kobo", "100", "--attempts", "1"}, args...)...)
			}
			check := func(what string, r result, code int) {
				t.Helper()
				if r.code != code {
					t.Errorf("%s: exit %d, want %d\nstdout %q\nstderr %q", what, r.code, code, r.stdout, r.stderr)
				}
				if bad := obeyedIn(r.stdout + r.stderr); bad != "" {
					t.Errorf("%s wrote %s, from the server, to the terminal:\nstdout %q\nstderr %q", what, bad, r.stdout, r.stderr)
				}
				if !strings.Contains(r.stdout+r.stderr, "₦10,000 to Bola") {
					t.Errorf("%s: the server's printable text is no longer readable:\nstdout %q\nstderr %q", what, r.stdout, r.stderr)
				}
			}
			check("bank send (refused)", send(), exitcode.No)
			r := send("--json")
			check("bank send --json (refused)", r, exitcode.No)
			var obj struct{ Body map[string]string }
			if err := json.Unmarshal([]byte(r.stdout), &obj); err != nil || obj.Body["message"] != attack.seq+"₦10,000 to Bola" {
				t.Errorf("bank send --json: the body's message is not the server's, escaped: %v %q", err, r.stdout)
			}
			mu.Lock()
			refuse = false
			mu.Unlock()
			check("bank send (made)", send(), exitcode.OK)
			check("bank send --json (made)", send("--json"), exitcode.OK)
			check("bank status", cli(t, nil, "status", "--server", srv.URL, "--state", state, "some-key-0000000001"), exitcode.OK)
			check("bank status --json", cli(t, nil, "status", "--json", "--server", srv.URL, "--state", state, "some-key-0000000001"), exitcode.OK)
		})
	}
}

// TestSendNeverFollowsARedirect: a 302 or 307 to another port is not
// followed: the token and the key never arrive there, the outcome is
// unknown (exit 4), and the draft, with its key, is kept for a retry.
func TestSendNeverFollowsARedirect(t *testing.T) {
	t.Parallel()
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var arrived []string
			elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				arrived = append(arrived, fmt.Sprintf("%s %s Authorization=%q Idempotency-Key=%q", r.Method, r.URL, r.Header.Get("Authorization"), r.Header.Get("Idempotency-Key")))
				mu.Unlock()
				// What it answers looks like the bank's: it must not count.
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(201)
				w.Write([]byte(`{"transferId":1,"from":1,"to":2,"amountKobo":100,"balanceKobo":0}`))
			}))
			defer elsewhere.Close()
			bank := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, elsewhere.URL+r.URL.RequestURI(), code)
			}))
			defer bank.Close()
			state := filepath.Join(t.TempDir(), "draft.json")
			r := cli(t, nil, "send", "--server", bank.URL, "--state", state, "--token", "token-secret-ada", "--from", "1", "--to", "2", "--amount-kobo", "100")
			if r.code != exitcode.Unknown || !strings.Contains(r.stderr, "redirect") || !strings.Contains(r.stderr, "unknown") || !strings.Contains(r.stderr, "draft is kept") {
				t.Errorf("a %d: exit %d, want %d (unknown)\nstdout %q\nstderr %q", code, r.code, exitcode.Unknown, r.stdout, r.stderr)
			}
			draft, err := os.ReadFile(state)
			if err != nil || !strings.Contains(string(draft), `"key"`) {
				t.Errorf("the draft, with its key, was not kept after a %d: %v", code, err)
			}
			r = cli(t, nil, "status", "--state", state)
			if r.code != exitcode.Unknown || !strings.Contains(r.stderr, "redirect") {
				t.Errorf("bank status, redirected: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
			}
			if _, err := os.Stat(state); err != nil {
				t.Errorf("bank status, redirected, removed the draft: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(arrived) > 0 {
				t.Errorf("after a %d, requests arrived at the other port: %q", code, arrived)
			}
		})
	}
}

// TestSendAnswerNotTheBanks: a page, a wrong content type or JSON of
// another shape is not the bank's answer, whatever its status: the
// outcome is unknown (exit 4), and the draft is kept; bank status says
// the same of such an answer to its lookup, and keeps the draft.
func TestSendAnswerNotTheBanks(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name        string
		status      int
		contentType string
		body        string
	}{
		{"HTML 200", 200, "text/html; charset=utf-8", "<html><body>Welcome to the hotel Wi-Fi</body></html>"},
		{"HTML 404", 404, "text/html", "<h1>Not Found</h1>"},
		{"JSON as text/plain", 201, "text/plain", `{"transferId":1}`},
		{"JSON of another shape", 200, "application/json", `{"ok":true}`},
		{"an error without a code", 400, "application/json", `{"message":"bad"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", c.contentType)
				w.WriteHeader(c.status)
				w.Write([]byte(c.body))
			}))
			defer srv.Close()
			state := filepath.Join(t.TempDir(), "draft.json")
			r := cli(t, nil, "send", "--server", srv.URL, "--state", state, "--from", "1", "--to", "2", "--amount-kobo", "100")
			if r.code != exitcode.Unknown || !strings.Contains(r.stderr, "not the bank's") || !strings.Contains(r.stderr, "draft is kept") {
				t.Errorf("exit %d, want %d (unknown)\nstdout %q\nstderr %q", r.code, exitcode.Unknown, r.stdout, r.stderr)
			}
			if _, err := os.Stat(state); err != nil {
				t.Fatalf("the draft was not kept: %v", err)
			}
			r = cli(t, nil, "send", "--json", "--resume", "--state", state)
			var obj map[string]any
			if json.Unmarshal([]byte(r.stdout), &obj) != nil || obj["outcome"] != "unknown" || obj["draft"] != state || r.code != exitcode.Unknown {
				t.Errorf("bank send --json: exit %d, %q", r.code, r.stdout)
			}
			r = cli(t, nil, "status", "--state", state)
			if r.code != exitcode.Unknown || !strings.Contains(r.stderr, "not the bank's") || strings.Contains(r.stdout, "completed") {
				t.Errorf("bank status: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
			}
			if _, err := os.Stat(state); err != nil {
				t.Errorf("bank status removed the draft: %v", err)
			}
		})
	}
}
