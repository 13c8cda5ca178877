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
	"github.com/zudojs/bank/cmd/bank/internal/pace"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab/mistakes"
)

// runBound is how long one run of the client may take: the contract's
// 60 s to give up, and room to end.
const runBound = 75 * time.Second

// trial is one run of one check: a fresh bank, the front the check
// plans, the client's runs, and the card's line being written.
type trial struct {
	ctx     context.Context
	cfg     *Config
	pool    *pgxpool.Pool
	bank    *api.Server
	drafts  string
	fronts  []*front
	clients []*client // every run of the client, in order
	started time.Time // when the check began: its diagram's clock starts there
	res     grade.Result
	done    bool
	// timeout is the ATTEMPT_TIMEOUT_MS given to every run of the check:
	// the grade's, stretched by the machine's load when the first run
	// started.
	timeout time.Duration
}

// stop ends the check's run of its function: a verdict was given.
type stop struct{}

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
		res: grade.Result{Name: c.Name, Title: c.Title, Required: c.Required, See: c.See, Writes: -1, Evidence: []string{}}}
	t.bank = &api.Server{Transfers: &api.Transfers{DB: pool, Keys: &idem.Store{LockTTL: 2 * time.Second}},
		DB: pool, Keys: pool, Tokens: api.Tokens, Now: time.Now}
	defer func() {
		for _, f := range t.fronts {
			f.close()
		}
	}()
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(stop); !ok {
					panic(r)
				}
			}
		}()
		c.run(t)
	}()
	t.res.Recording = t.drawing(c)
	if ctx.Err() != nil {
		return t.res, ctx.Err()
	}
	if !t.done {
		t.res.Verdict, t.res.Why = grade.Pass, "held"
	}
	return t.res, nil
}

// serve starts a front with the check's plan, and returns it.
func (t *trial) serve(plan func(n int, a *attempt) fault) *front {
	f, err := newFront(t.bank, plan)
	t.must(err)
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
			t.note("ATTEMPT_TIMEOUT_MS=%d: %s, stretched by the machine's load", t.timeout.Milliseconds(), t.cfg.AttemptTimeout)
		}
	}
	c, err := startClient(t.ctx, t.cfg.Command, map[string]string{
		"BANK_URL": f.URL(), "BANK_TOKEN": tokenOf[from], "TRANSFER": body, "DRAFTS": drafts,
		"ATTEMPT_TIMEOUT_MS": strconv.FormatInt(t.timeout.Milliseconds(), 10)})
	t.must(err)
	c.front, c.n = f, n
	t.clients = append(t.clients, c)
	return c
}

// finish waits for a run to end (bounded), notes its outcome, and fails
// the check when it did not end or ended without a proper report.
func (t *trial) finish(c *client) outcome {
	o := c.wait(pace.Stretch(runBound))
	t.note("the client's run ended: %s, after %s", o, o.Took.Round(time.Millisecond))
	if o.Output != "" {
		t.note("its last output: %s", o.Output)
	}
	if !o.Exited {
		t.fail(nil, "the client was still running after %s: it never gave up (the contract: at most 10 attempts, within 60 s)", pace.Stretch(runBound))
	}
	if o.Problem != "" {
		t.fail(nil, "the client did not report an outcome as the contract says: %s", o.Problem)
	}
	return o
}

// note adds a line of evidence.
func (t *trial) note(format string, args ...any) {
	t.res.Evidence = append(t.res.Evidence, fmt.Sprintf(format, args...))
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
		t.note("+%dms %s: %s", a.At.Sub(start).Milliseconds(), what, a.Did)
	}
}

func quoteKey(k string) string {
	if k == "" {
		return "(none)"
	}
	return strconv.Quote(k)
}

func (t *trial) verdict(v, why string) {
	if t.done {
		return
	}
	t.done = true
	t.res.Verdict, t.res.Why = v, why
	panic(stop{})
}

// fail ends the check failed; m is the mistake the evidence fits, or nil.
func (t *trial) fail(m *mistakes.Mistake, format string, args ...any) {
	if m != nil {
		t.res.Mistake, t.res.LooksLike = m.Name, m.Diagnosis
		t.res.See = m.See
	}
	t.verdict(grade.Fail, fmt.Sprintf(format, args...))
}

func (t *trial) pass(format string, args ...any) { t.verdict(grade.Pass, fmt.Sprintf(format, args...)) }

func (t *trial) unknown(format string, args ...any) {
	t.verdict(grade.Unknown, fmt.Sprintf(format, args...))
}

func (t *trial) must(err error) {
	if err != nil {
		t.fail(nil, "the grader could not go on: %v", err)
	}
}

// books checks the bank after the check: the total conserved, every
// balance its seed plus its transfers, and each intent moved money as
// many times as it should.
func (t *trial) books(intents ...audit.Intent) audit.Books {
	b, err := audit.Read(t.ctx, t.pool, nil)
	t.must(err)
	t.note("the bank after: %s", b.Line())
	for _, f := range audit.Broken(b.Conserved(), b.LedgerAgrees(), b.OnceEach(intents, true)) {
		for _, e := range f.Evidence {
			t.note("%s", e)
		}
		t.fail(nil, "%s: %s", f.Check, f.Detail)
	}
	return b
}

// noteBooks notes the bank as it is, judging nothing: for a check that
// fails for a reason the books only confirm.
func (t *trial) noteBooks() {
	if b, err := audit.Read(t.ctx, t.pool, nil); err == nil {
		t.note("the bank after: %s", b.Line())
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
	t.must(os.Mkdir(dir, 0o700))
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
