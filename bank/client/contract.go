package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// This client, run as bank grade client's contract starts a learner's:
// from its environment, with its draft in the folder given, its outcome
// said by the exit status and the last line.

// The exit statuses of the contract's three outcomes.
const (
	ExitMade    = 0
	ExitRefused = 3
	ExitUnknown = 4
)

// The contract's limits: at most 10 attempts, within 60 s (the deadline
// leaves room for the lookup and the process's own start).
const (
	contractAttempts = 10
	contractDeadline = 45 * time.Second
)

// Graded is one run of the client as the contract starts it.
type Graded struct {
	URL, Token     string
	Transfer       json.RawMessage
	Drafts         string // the folder the draft is kept in
	AttemptTimeout time.Duration
}

// GradedFromEnv reads the contract's variables: BANK_URL, BANK_TOKEN,
// TRANSFER, DRAFTS and ATTEMPT_TIMEOUT_MS, all required.
func GradedFromEnv(getenv func(string) string) (Graded, error) {
	g := Graded{URL: getenv("BANK_URL"), Token: getenv("BANK_TOKEN"), Transfer: json.RawMessage(getenv("TRANSFER")), Drafts: getenv("DRAFTS")}
	ms, err := strconv.Atoi(getenv("ATTEMPT_TIMEOUT_MS"))
	switch {
	case g.URL == "" || g.Token == "" || g.Drafts == "":
		return g, errors.New("BANK_URL, BANK_TOKEN and DRAFTS must be set, as bank grade client sets them")
	case !json.Valid(g.Transfer):
		return g, errors.New(`TRANSFER must be the transfer's JSON body, such as {"from":1,"to":2,"amountKobo":1000000}`)
	case err != nil || ms <= 0:
		return g, errors.New("ATTEMPT_TIMEOUT_MS must be a number of milliseconds, such as 1000")
	}
	g.AttemptTimeout = time.Duration(ms) * time.Millisecond
	return g, nil
}

// outcome is the contract's last line.
type outcome struct {
	Outcome    string `json:"outcome"`
	TransferID int64  `json:"transferId,omitempty"`
	Status     int    `json:"status,omitempty"`
	Error      string `json:"error,omitempty"`
}

// Run sends the transfer: under the key of an unfinished draft in Drafts
// when there is one (the same intent, after the client was killed), else
// under a new key saved in a new draft first. It writes each attempt to
// log, the outcome as the last line of out, and returns the exit status.
func (g Graded) Run(ctx context.Context, out, log io.Writer, rnd *rand.Rand) int {
	path := filepath.Join(g.Drafts, "draft.json")
	d, err := LoadDraft(path)
	if err != nil {
		fmt.Fprintf(log, "bank: %v\n", err)
		return 1
	}
	if d == nil {
		d = &Draft{Key: NewKey(), Server: g.URL, Token: g.Token, Body: g.Transfer, SavedAt: time.Now().UTC()}
		if err := d.Save(path); err != nil {
			fmt.Fprintf(log, "bank: saving the draft before sending: %v\n", err)
			return 1
		}
	} else {
		fmt.Fprintf(log, "resuming the draft's transfer under its key %s\n", d.Key)
	}
	ctx, cancel := context.WithTimeout(ctx, contractDeadline)
	defer cancel()
	c := &Client{
		BaseURL: g.URL, Token: d.Token, HTTP: &http.Client{Timeout: g.AttemptTimeout},
		MaxAttempts: contractAttempts, Rand: rnd,
		Report: func(at Attempt) {
			what := strconv.Itoa(at.Status)
			if at.Status == 0 {
				what = "no answer (" + at.Network + ")"
			}
			fmt.Fprintf(log, "attempt %d under key %s: %s\n", at.N, d.Key, what)
		},
	}
	res, err := c.Send(ctx, d.Key, d.Body)
	if err == nil {
		err = res.Check()
	}
	var said outcome
	if err != nil {
		fmt.Fprintf(log, "bank: %v\n", err)
		said = g.ask(c, d.Key, log)
	} else {
		said = answered(res.Status, res.Body)
	}
	if said.Outcome != "unknown" {
		os.Remove(path) // settled: the next run is a new intent
	}
	line, _ := json.Marshal(said)
	fmt.Fprintf(out, "%s\n", line)
	switch said.Outcome {
	case "made":
		return ExitMade
	case "refused":
		return ExitRefused
	}
	return ExitUnknown
}

// ask is the lookup before giving up: the stored answer, if the server has
// one for key, else unknown.
func (g Graded) ask(c *Client, key string, log io.Writer) outcome {
	ctx, cancel := context.WithTimeout(context.Background(), g.AttemptTimeout)
	defer cancel()
	state, body, err := c.Lookup(ctx, key)
	if err != nil || state != "completed" {
		fmt.Fprintf(log, "asked GET /transfers?key=%s: %s\n", key, lookupSaid(state, err))
		return outcome{Outcome: "unknown"}
	}
	var stored struct {
		ResponseStatus int             `json:"responseStatus"`
		ResponseBody   json.RawMessage `json:"responseBody"`
	}
	if json.Unmarshal(body, &stored) != nil {
		return outcome{Outcome: "unknown"}
	}
	fmt.Fprintf(log, "asked GET /transfers?key=%s: completed, %d\n", key, stored.ResponseStatus)
	return answered(stored.ResponseStatus, stored.ResponseBody)
}

func lookupSaid(state string, err error) string {
	if err != nil {
		return err.Error()
	}
	return state
}

// answered is the outcome of the bank's answer: made with its transfer id,
// or refused with its error code.
func answered(status int, body []byte) outcome {
	var p struct {
		TransferID int64  `json:"transferId"`
		Error      string `json:"error"`
	}
	if json.Unmarshal(body, &p) != nil {
		return outcome{Outcome: "unknown"}
	}
	if status/100 == 2 {
		return outcome{Outcome: "made", TransferID: p.TransferID}
	}
	return outcome{Outcome: "refused", Status: status, Error: p.Error}
}
