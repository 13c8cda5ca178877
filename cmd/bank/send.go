package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zudojs/bank/bank/client"
	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
)

type sendFlags struct {
	server, token, state string
	from, to, amount     int64
	resume, fresh        bool
	quotedKey            bool // --quoted-key: the draft's form of the key
	serverSet            bool // --server was given: a resumed draft goes there
	attempts             int
	deadline, backoff    time.Duration
	seed                 uint64
	json                 bool
	graded               bool // --client-contract: run as bank grade client starts a client
}

func (a *app) sendCommand() *cobra.Command {
	var f sendFlags
	cmd := &cobra.Command{
		Use:   "send --from N --to N --amount-kobo N",
		Short: "Send a transfer the way a good app does: one key per intent, safe retries",
		Long: `Send one transfer to a bank serve. The idempotency key is made once for this
intent and saved with it (the draft) before the first attempt; every retry uses
it, and so does "bank send --resume" after this client itself was killed.

Retries only what may succeed later (network errors, 5xx, 409, 429), with
exponential backoff and full jitter, honouring Retry-After, within --attempts
and --deadline. When it gives up, the outcome is unknown, not failed: the
draft is kept, and "bank status" asks the server what happened.

An answer that is not the bank's (a redirect, which is never followed, a page,
JSON of another shape) leaves the outcome unknown too, and the draft kept. What
the server sends is never written to the terminal as it came: its control
characters are shown escaped (\x1b).

Exit status: 0 the transfer was made, 1 the bank refused it, 2 bad command
line, 3 the server could not be reached (nothing was sent), 4 the outcome is
unknown. The client and the draft: bank help send.`,
		Example: `  bank send --from 1 --to 2 --amount-kobo 1000000
  bank send --resume
  bank send --token token-bola --from 2 --to 1 --amount-kobo 50000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.serverSet = cmd.Flags().Changed("server")
			if f.graded {
				return a.sendGraded(cmd)
			}
			return a.send(cmd.Context(), f, cmd.Flags().Changed("seed"))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.server, "server", "http://127.0.0.1:8080", "the bank serve to send to")
	fl.StringVar(&f.token, "token", "token-ada", "bearer token: token-ada, token-bola or token-chidi")
	fl.Int64Var(&f.from, "from", 0, "account to send from (required)")
	fl.Int64Var(&f.to, "to", 0, "account to send to (required)")
	fl.Int64Var(&f.amount, "amount-kobo", 0, "amount in kobo, 100 kobo = ₦1 (required)")
	fl.BoolVar(&f.resume, "resume", false, "finish the saved draft, with its key")
	fl.BoolVar(&f.fresh, "new", false, "start a new intent even though a draft is pending")
	fl.StringVar(&f.state, "state", "", "draft file (default $XDG_STATE_HOME/bank/draft.json, or ~/.local/state/bank/draft.json)")
	fl.IntVar(&f.attempts, "attempts", 4, "attempts at most")
	fl.DurationVar(&f.deadline, "deadline", 30*time.Second, "give up after this long")
	fl.DurationVar(&f.backoff, "backoff", 50*time.Millisecond, "ceiling of the first backoff; it doubles each attempt, up to 5s")
	fl.Uint64Var(&f.seed, "seed", 0, "seed for the backoff jitter (default: random)")
	fl.BoolVar(&f.json, "json", false, `print one JSON object when it is over, with the outcome: made, refused, not_sent or unknown (bank help json: bank.send/v1)`)
	fl.BoolVar(&f.quotedKey, "quoted-key", false, `send the key as the IETF draft writes it, quoted: Idempotency-Key: "…" (default: bare, as the lesson writes it)`)
	fl.BoolVar(&f.graded, "client-contract", false, "run as bank grade client --contract says a client runs: the transfer, server, token, draft folder and attempt timeout from its environment, the outcome as its exit status and last line (bank grade client -- bank send --client-contract)")
	return cmd
}

// sendGraded is bank send --client-contract: the lab's client as the
// client grader runs a learner's, everything from the environment.
func (a *app) sendGraded(cmd *cobra.Command) error {
	g, err := client.GradedFromEnv(a.getenv)
	if cmd.Flags().NFlag() > 1 {
		err = errors.New("it reads everything from the environment: drop the other flags")
	}
	if err != nil {
		return exitcode.Usagef("--client-contract: %v", err)
	}
	if code := g.Run(cmd.Context(), a.io.Out, a.io.Err, mrand.New(mrand.NewPCG(mrand.Uint64(), mrand.Uint64()))); code != 0 {
		return exitcode.Silent{Code: code}
	}
	return nil
}

func (a *app) statePath(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if d := a.getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "bank", "draft.json"), nil
	}
	home := a.getenv("HOME")
	if home == "" {
		return "", exitcode.Usagef("no HOME to keep the draft in: pass --state FILE")
	}
	return filepath.Join(home, ".local", "state", "bank", "draft.json"), nil
}

// send is bank send: the flags checked, the draft made or resumed (its key
// saved before the first attempt), the attempts through the client, and the
// outcome said and kept. It is long because it is those steps in the order
// they happen, each a few lines, and reads best as one story.
func (a *app) send(ctx context.Context, f sendFlags, seeded bool) error {
	if f.attempts < 1 {
		return exitcode.Usagef("--attempts must be at least 1")
	}
	if f.backoff <= 0 || f.deadline <= 0 {
		return exitcode.Usagef("--backoff and --deadline must be positive, such as 50ms and 30s")
	}
	path, err := a.statePath(f.state)
	if err != nil {
		return err
	}
	pending, err := client.LoadDraft(path)
	if errors.Is(err, client.ErrDamagedDraft) {
		return exitcode.Envf("%v", err)
	}
	if err != nil {
		return err
	}
	var d *client.Draft
	switch {
	case f.resume && pending == nil:
		return exitcode.Usagef("no pending transfer to resume in %s", path)
	case f.resume:
		d = pending
		if f.serverSet { // the server moved, say; the key is what keeps it safe
			d.Server = strings.TrimRight(f.server, "/")
		}
	case pending != nil && !f.fresh:
		return exitcode.Usagef("a transfer is still pending (key %s): finish it with bank send --resume, check it with bank status, or pass --new to start another", pending.Key)
	default:
		var missing []string
		for name, v := range map[string]int64{"--from": f.from, "--to": f.to, "--amount-kobo": f.amount} {
			if v == 0 {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			return exitcode.Usagef("missing %s: bank send --from 1 --to 2 --amount-kobo 1000000", strings.Join(slices.Sorted(slices.Values(missing)), ", "))
		}
		// Refused here, before a draft is saved: a draft is an intent the
		// lab keeps and retries, and these are none.
		switch {
		case f.amount < 0:
			return exitcode.Usagef("--amount-kobo is what moves, in kobo, more than 0 (100 kobo = ₦1: ₦10,000 is 1000000), not %d", f.amount)
		case f.from < 0 || f.to < 0:
			return exitcode.Usagef("--from and --to are account numbers, 1 or more (the lesson's are 1 Ada, 2 Bola, 3 Chidi), not %d", min(f.from, f.to))
		}
		body, _ := json.Marshal(map[string]int64{"from": f.from, "to": f.to, "amountKobo": f.amount})
		d = &client.Draft{Key: client.NewKey(), Server: strings.TrimRight(f.server, "/"), Token: f.token, Body: body, SavedAt: time.Now().UTC()}
		if err := d.Save(path); err != nil {
			return fmt.Errorf("saving the draft before sending: %w", err)
		}
	}
	seed := f.seed
	if !seeded {
		seed = mrand.Uint64()
	}
	ctx, cancel := context.WithTimeout(ctx, f.deadline)
	defer cancel()
	out := a.io.Out
	if f.json {
		out = io.Discard // the attempts go into the object instead
	}
	attempts := []sentAttempt{}
	c := &client.Client{
		BaseURL:     d.Server,
		Token:       d.Token,
		HTTP:        &http.Client{Timeout: 10 * time.Second},
		MaxAttempts: f.attempts,
		BaseDelay:   f.backoff,
		MaxDelay:    max(5*time.Second, f.backoff),
		Rand:        mrand.New(mrand.NewPCG(seed, seed)),
		QuotedKey:   f.quotedKey,
		Report: func(at client.Attempt) {
			what := fmt.Sprintf("%d", at.Status)
			if at.Status == 0 {
				what = "network error (" + at.Network + ")"
			} else if at.Replayed {
				what += " replayed: true"
			}
			next := ""
			if at.Retry {
				next = fmt.Sprintf(", will retry in %s", at.Wait.Round(time.Millisecond))
			}
			fmt.Fprintf(out, "attempt %d: %s%s\n", at.N, what, next)
			attempts = append(attempts, sentAttempt{at.N, at.Status, at.Network, at.Replayed, at.Retry})
		},
	}
	report := func(outcome string, res client.Result) {
		if !f.json {
			return
		}
		obj := sent{Schema: "bank.send/v1", Key: d.Key, Outcome: outcome, Attempts: attempts, Status: res.Status}
		if body := client.SafeJSON(res.Body); body != nil {
			obj.Body = body
		}
		if outcome == "not_sent" || outcome == "unknown" {
			obj.Draft = path
		}
		_ = json.NewEncoder(a.io.Out).Encode(obj)
	}
	fmt.Fprintf(out, "sending %s to %s with Idempotency-Key %s\n", d.Body, d.Server, client.KeyField(d.Key, f.quotedKey))
	res, err := c.Send(ctx, d.Key, d.Body)
	if errors.Is(err, client.ErrNotSent) {
		report("not_sent", res)
		fmt.Fprintf(a.io.Err, "bank: %v\n  the draft is kept in %s; once the server is up: bank send --resume\n", err, path)
		return exitcode.Silent{Code: exitcode.Env}
	}
	if err == nil {
		// A redirect, a page, JSON of another shape: something that is
		// not the bank answered, and the outcome is as unknown as after
		// a timeout.
		if err = res.Check(); err != nil {
			err = fmt.Errorf("%w: %w; the transfer may or may not have happened: check with its key", client.ErrOutcomeUnknown, err)
		}
	}
	if err != nil {
		report("unknown", res)
		fmt.Fprintf(a.io.Err, "bank: %v\n  the draft is kept in %s; check with: bank status   or retry with: bank send --resume\n", err, path)
		return exitcode.Silent{Code: exitcode.Unknown}
	}
	os.Remove(path) // a definitive answer: the intent is settled
	fmt.Fprintf(out, "server answered %d: %s\n", res.Status, client.Printable(res.Body))
	if res.Status/100 == 2 {
		report("made", res)
	} else {
		report("refused", res)
	}
	if res.Status/100 != 2 {
		return exitcode.Nof("the bank refused the transfer: %s", errorCode(res.Body))
	}
	return nil
}

// errorCode is the bank's error code and message, as text safe for a
// terminal: they are the server's bytes.
func errorCode(body []byte) string {
	var p struct{ Error, Message string }
	if json.Unmarshal(body, &p) == nil && p.Error != "" {
		return client.Printable([]byte(p.Error + " (" + p.Message + ")"))
	}
	return client.Printable(body)
}

// sent is what bank send --json prints (bank.send/v1).
type sent struct {
	Schema   string        `json:"schema"`
	Key      string        `json:"key"`
	Outcome  string        `json:"outcome"`
	Attempts []sentAttempt `json:"attempts"`
	Status   int           `json:"status"`
	Body     any           `json:"body,omitempty"`
	Draft    string        `json:"draft,omitempty"`
}

type sentAttempt struct {
	N        int    `json:"attempt"`
	Status   int    `json:"status"`
	Network  string `json:"network,omitempty"`
	Replayed bool   `json:"replayed"`
	Retry    bool   `json:"retry"`
}
