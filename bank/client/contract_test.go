package client

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestGradedRun: the client as bank grade client runs it says each
// outcome with the contract's exit status and last line, keeps its draft
// only while the outcome is unknown, and resumes a draft under its key.
func TestGradedRun(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	var answer func(w http.ResponseWriter, r *http.Request)
	serve := func(h func(w http.ResponseWriter, r *http.Request)) { mu.Lock(); answer = h; mu.Unlock() }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if r.Method == http.MethodPost {
			keys = append(keys, r.Header.Get("Idempotency-Key"))
		}
		h := answer
		mu.Unlock()
		h(w, r)
	}))
	defer srv.Close()
	reply := func(status int, body string) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			io.WriteString(w, body)
		}
	}
	env := map[string]string{"BANK_URL": srv.URL, "BANK_TOKEN": "token-ada", "TRANSFER": `{"from":1,"to":2,"amountKobo":100}`,
		"DRAFTS": t.TempDir(), "ATTEMPT_TIMEOUT_MS": "500"}
	g, err := GradedFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	draft := filepath.Join(env["DRAFTS"], "draft.json")
	run := func(wantCode int, wantLine string) {
		t.Helper()
		var out strings.Builder
		code := g.Run(context.Background(), &out, io.Discard, rand.New(rand.NewPCG(1, 2)))
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if code != wantCode || lines[len(lines)-1] != wantLine {
			t.Fatalf("exit %d, last line %q; want exit %d, %q", code, lines[len(lines)-1], wantCode, wantLine)
		}
		_, err := os.Stat(draft)
		if kept := err == nil; kept != (wantCode == ExitUnknown) {
			t.Fatalf("exit %d: draft kept %v", code, kept)
		}
	}
	serve(reply(201, `{"transferId":7}`))
	run(ExitMade, `{"outcome":"made","transferId":7}`)
	serve(reply(422, `{"error":"insufficient_funds","message":"not enough"}`))
	run(ExitRefused, `{"outcome":"refused","status":422,"error":"insufficient_funds"}`)
	if len(keys) != 2 || keys[0] == keys[1] {
		t.Fatalf("two intents sent under %v: want two keys", keys)
	}
	// An answer that is not the bank's: unknown, after asking, whose
	// answer is not the bank's either; the draft stays, and the next run
	// sends it again under its key.
	serve(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>")) })
	run(ExitUnknown, `{"outcome":"unknown"}`)
	serve(reply(201, `{"transferId":8}`))
	run(ExitMade, `{"outcome":"made","transferId":8}`)
	if keys[len(keys)-1] != keys[len(keys)-2] {
		t.Fatalf("the resumed draft went under %s, not its key %s", keys[len(keys)-1], keys[len(keys)-2])
	}
	// The lookup after an answer not the bank's: its stored answer is
	// the outcome.
	serve(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			reply(200, `{"status":"completed","responseStatus":201,"responseBody":{"transferId":9}}`)(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(200)
	})
	run(ExitMade, `{"outcome":"made","transferId":9}`)
}

func TestGradedFromEnv(t *testing.T) {
	full := map[string]string{"BANK_URL": "http://127.0.0.1:1", "BANK_TOKEN": "t", "TRANSFER": `{}`, "DRAFTS": "/d", "ATTEMPT_TIMEOUT_MS": "1000"}
	for name, want := range map[string]string{"BANK_URL": "must be set", "TRANSFER": "JSON body", "ATTEMPT_TIMEOUT_MS": "milliseconds"} {
		env := map[string]string{}
		for k, v := range full {
			env[k] = v
		}
		env[name] = ""
		if _, err := GradedFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("without %s: %v, want an error saying %q", name, err, want)
		}
	}
	if g, err := GradedFromEnv(func(k string) string { return full[k] }); err != nil || g.AttemptTimeout.Milliseconds() != 1000 {
		t.Errorf("the full environment: %+v, %v", g, err)
	}
}
