// A starter for bank grade client: the lesson's app sending one transfer.
//
// It sends once, under a key of its own, and never retries: bank grade client
// passes plain and the refusals, and fails the checks where something goes
// wrong on the way. The lines marked YOUR WORK are where the lesson's
// client rules go (bank grade client --contract says them all).
//
// Run it the way the grader does:  go build -o client . && bank grade client -- ./client
package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// report prints the outcome as the contract wants it, a last line, and
// exits with its status.
func report(outcome map[string]any, code int) {
	line, _ := json.Marshal(outcome)
	fmt.Println(string(line))
	os.Exit(code)
}

func main() {
	base, token, body := os.Getenv("BANK_URL"), os.Getenv("BANK_TOKEN"), os.Getenv("TRANSFER")
	ms, err := strconv.Atoi(os.Getenv("ATTEMPT_TIMEOUT_MS"))
	if err != nil {
		ms = 1000
	}
	client := &http.Client{Timeout: time.Duration(ms) * time.Millisecond}

	// YOUR WORK: the key belongs to the intent, and is kept with the
	// draft. Before anything is sent, look in os.Getenv("DRAFTS") for an
	// unfinished draft and, if there is one, resend its transfer under its
	// key; else save the new key with the transfer, durably, first.
	random := make([]byte, 16)
	rand.Read(random)
	key := hex.EncodeToString(random)
	req, err := http.NewRequest(http.MethodPost, base+"/transfers", strings.NewReader(body))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)

	// YOUR WORK: retry what may succeed later (no answer, 409, 429, 5xx)
	// under the same key, waiting longer each time with a random part
	// (backoff and jitter), never sooner than Retry-After; at most 10
	// attempts, then ask GET /transfers?key= before saying unknown.
	res, err := client.Do(req)
	if err != nil {
		report(map[string]any{"outcome": "unknown"}, 4) // no answer: it may have been made
	}
	defer res.Body.Close()
	var answer struct {
		TransferID int64  `json:"transferId"`
		Error      string `json:"error"`
	}
	json.NewDecoder(res.Body).Decode(&answer)
	switch {
	case res.StatusCode >= 200 && res.StatusCode < 300:
		report(map[string]any{"outcome": "made", "transferId": answer.TransferID}, 0)
	case res.StatusCode >= 400 && res.StatusCode < 500 && res.StatusCode != 409 && res.StatusCode != 429:
		// YOUR WORK: mark the draft finished.
		report(map[string]any{"outcome": "refused", "status": res.StatusCode, "error": answer.Error}, 3)
	}
	report(map[string]any{"outcome": "unknown"}, 4) // a 409, 429 or 5xx: it may yet be made
}
