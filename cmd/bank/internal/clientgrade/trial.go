package clientgrade

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/bank/audit"
	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/cmd/bank/internal/grade/verdict"
	"github.com/zudojs/bank/cmd/bank/internal/pace"
	"github.com/zudojs/bank/idem"
)

// runBound is how long one run of the client may take: the contract's
// 60 s to give up, and room to end.
const runBound = 75 * time.Second

// trial is one run of one check: a fresh bank, the front the check
// plans, the client's runs, and the card's line being written.
type trial struct {
	ctx          context.Context
	cfg          *Config
	pool         *pgxpool.Pool
	bank         *api.Server
	drafts       string
	fronts       []*front
	clients      []*client // every run of the client, in order
	started      time.Time // when the check began: its diagram's clock starts there
	verdict.Line           // the check's line of the card
	// timeout is the ATTEMPT_TIMEOUT_MS given to every run of the check:
	// the grade's, stretched by the machine's load when the first run
	// started.
	timeout time.Duration
}

// runCheck runs one check once, on a fresh bank.
func runCheck(ctx context.Context, cfg *Config, c Check, n int) (res grade.Result, err error) {
	url, _, drop, err := cfg.NewDatabase(ctx, fmt.Sprintf("client-%s-%d", c.Name, n))
	if err != nil {
		return res, err
	}
	defer drop()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return res, err
	}
	defer pool.Close()
	drafts, err := os.MkdirTemp("", "bank-drafts-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(drafts)
	t := &trial{ctx: ctx, cfg: cfg, pool: pool, drafts: drafts, started: time.Now(),
		Line: verdict.New(c.Name, c.Title, c.Required, c.See)}
	t.bank = &api.Server{Transfers: &api.Transfers{DB: pool, Keys: &idem.Store{LockTTL: 2 * time.Second}},
		DB: pool, Keys: pool, Tokens: api.Tokens, Now: time.Now}
	defer func() {
		for _, f := range t.fronts {
			f.close()
		}
	}()
	t.Run(func() { c.run(t) })
	t.Result.Recording = t.drawing(c)
	if ctx.Err() != nil {
		return t.Result, ctx.Err()
	}
	return t.Result, nil
}

// serve starts a front with the check's plan, and returns it.
func (t *trial) serve(plan func(n int, a *attempt) fault) *front {
	f, err := newFront(t.bank, plan)
	t.Must(err)
	t.fronts = append(t.fronts, f)
	return f
}

// transfer is an intent's body, as TRANSFER gives it.
func transfer(from, to, kobo int64) string {
	return fmt.Sprintf(`{"from":%d,"to":%d,"amountKobo":%d}`, from, to, kobo)
}

var tokenOf = map[int64]string{1: "token-ada", 2: "token-bola", 3: "token-chidi"}

// launch starts a run of the client through front f, for the transfer
// body, in drafts (the check's own folder when "").
func (t *trial) launch(f *front, body string, from int64, drafts string) *client {
	if drafts == "" {
		drafts = t.drafts
	}
	f.mu.Lock()
	f.run++
	n := f.run
	f.mu.Unlock()
	// On a busy machine a client may take longer than the timeout just
	// to send its request and read the answer: the bound given stretches
	// with the load, as every limit of the lab's does.
	if t.timeout == 0 {
		t.timeout = pace.Stretch(t.cfg.AttemptTimeout).Round(time.Millisecond)
		if t.timeout != t.cfg.AttemptTimeout {
			t.Note("ATTEMPT_TIMEOUT_MS=%d: %s, stretched by the machine's load", t.timeout.Milliseconds(), t.cfg.AttemptTimeout)
		}
	}
	c, err := startClient(t.ctx, t.cfg.Command, map[string]string{
		"BANK_URL": f.URL(), "BANK_TOKEN": tokenOf[from], "TRANSFER": body, "DRAFTS": drafts,
		"ATTEMPT_TIMEOUT_MS": strconv.FormatInt(t.timeout.Milliseconds(), 10)})
	t.Must(err)
	c.front, c.n = f, n
	f.mu.Lock()
	f.busy = c.child.Busy
	f.mu.Unlock()
	t.clients = append(t.clients, c)
	return c
}

// finish waits for a run to end (bounded), notes its outcome, and fails
// the check when it did not end or ended without a proper report.
func (t *trial) finish(c *client) outcome {
	o := c.wait(pace.Stretch(runBound))
	t.Note("the client's run ended: %s, after %s", o, o.Took.Round(time.Millisecond))
	if o.Output != "" {
		t.Note("its last output: %s", o.Output)
	}
	if !o.Exited {
		t.Fail(nil, "the client was still running after %s: it never gave up (the contract: at most 10 attempts, within 60 s)", pace.Stretch(runBound))
	}
	if o.Problem != "" {
		t.Fail(nil, "the client did not report an outcome as the contract says: %s", o.Problem)
	}
	return o
}

// noteAttempts adds every attempt the front saw, in order.
func (t *trial) noteAttempts(f *front) {
	start := time.Time{}
	for _, a := range f.all() {
		if start.IsZero() {
			start = a.At
		}
		what := a.Method + " " + a.Path
		if a.Method == "POST" {
			what = fmt.Sprintf("attempt %d (run %d) key=%s", a.N, a.Run, quoteKey(a.Key))
		}
		t.Note("+%dms %s: %s", a.At.Sub(start).Milliseconds(), what, a.Did)
	}
}

func quoteKey(k string) string {
	if k == "" {
		return "(none)"
	}
	return strconv.Quote(k)
}

// books checks the bank after the check: the total conserved, every
// balance its seed plus its transfers, and each intent moved money as
// many times as it should.
func (t *trial) books(intents ...audit.Intent) audit.Books {
	b, err := audit.Read(t.ctx, t.pool, nil)
	t.Must(err)
	t.Note("the bank after: %s", b.Line())
	for _, f := range audit.Broken(b.Conserved(), b.LedgerAgrees(), b.OnceEach(intents, true)) {
		for _, e := range f.Evidence {
			t.Note("%s", e)
		}
		t.Fail(nil, "%s: %s", f.Check, f.Detail)
	}
	return b
}

// noteBooks notes the bank as it is, judging nothing: for a check that
// fails for a reason the books only confirm.
func (t *trial) noteBooks() {
	if b, err := audit.Read(t.ctx, t.pool, nil); err == nil {
		t.Note("the bank after: %s", b.Line())
	}
}

// sameJSON reports whether two bodies are the same JSON value.
func sameJSON(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

// subfolder is a fresh folder of the check's drafts, for one of several
// clients at once.
func (t *trial) subfolder(name string) string {
	dir := filepath.Join(t.drafts, name)
	t.Must(os.Mkdir(dir, 0o700))
	return dir
}

// keyWords says what is wrong with a key, or "".
func keyWords(a attempt) string {
	switch {
	case a.Keys == 0:
		return "no Idempotency-Key header"
	case a.Keys > 1:
		return fmt.Sprintf("%d Idempotency-Key headers", a.Keys)
	case !idem.ValidKey(a.Key):
		return fmt.Sprintf("the key %s is not 16 to 64 letters, digits, - or _", quoteKey(a.Key))
	}
	return ""
}

// requestWords says what is wrong with an attempt's request for body
// from user, or "".
func requestWords(a attempt, body string, from int64) string {
	if w := keyWords(a); w != "" {
		return w
	}
	switch {
	case a.Auth != "Bearer "+tokenOf[from]:
		return fmt.Sprintf("Authorization %q, not %q", a.Auth, "Bearer "+tokenOf[from])
	case !strings.Contains(strings.ToLower(a.Type), "application/json"):
		return fmt.Sprintf("Content-Type %q, not application/json", a.Type)
	case !sameJSON(a.Body, body):
		return fmt.Sprintf("the body %s, not TRANSFER's %s", quoteLine(a.Body), body)
	}
	return ""
}
