package grade

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/bank/audit"
	"github.com/zudojs/bank/bank/client"
	"github.com/zudojs/bank/cmd/bank/internal/grade/record"
	"github.com/zudojs/bank/cmd/bank/internal/pace"
)

// trial is one check's world: its database, its servers, the proxies in
// front of them, and the evidence it gathers.
type trial struct {
	ctx     context.Context
	cfg     *Config
	db      *pgxpool.Pool // the admin's: PostgreSQL's views, the witness, the gate (never the server's tables)
	bank    *pgxpool.Pool // the server's own role's: every read of the bank's tables
	url     string
	servers []*instance
	proxies []*proxy
	intents []intent
	res     *Result
	run     int              // which run of the check this is (--repeat), from 0
	rec     *record.Recorder // what happened, for the check's diagram
	// ownCount: the check counts transfers per intent itself (torture),
	// so the ledger may hold transfers the trial's intents do not name.
	ownCount bool
	// hasWitness: whether the database has the witness, once asked.
	hasWitness *bool
	// settledSent: when settle last sent its request; settled409: when
	// it last sent one answered 409.
	settledSent, settled409 time.Time
}

// intent is one transfer the check asked for, by its accounts and
// amount, and how many times it should have moved money.
type intent struct {
	label          string
	from, to, kobo int64
	want           int
}

func (t *trial) startServer() error {
	in, err := startInstance(t.ctx, t.cfg, t.url)
	if err != nil {
		return err
	}
	p, err := startProxy(in.base, serverName(len(t.servers)), t.rec)
	if err != nil {
		in.kill()
		return err
	}
	t.servers = append(t.servers, in)
	t.proxies = append(t.proxies, p)
	return nil
}

// kill ends server i at once (SIGKILL), stop the orderly way (SIGTERM),
// restart starts it again on its port, and pauseServer and resumeServer
// freeze it and let it go on (SIGSTOP, SIGCONT): each drawn as it is done.
func (t *trial) kill(i int) {
	t.rec.Arrow(record.ActorApp, serverName(i), "kill (SIGKILL)", "")
	t.servers[i].kill()
}

func (t *trial) stop(i int) {
	t.rec.Arrow(record.ActorApp, serverName(i), "stop (SIGTERM)", "")
	t.servers[i].stop()
}

func (t *trial) restart(i int) error {
	err := t.servers[i].restart(t.ctx)
	if err != nil {
		t.rec.Arrow(record.ActorApp, serverName(i), "start again: "+record.Clean(err.Error()), "error")
		return err
	}
	t.rec.Arrow(record.ActorApp, serverName(i), "start again (on its port): it listens", "")
	return nil
}

func (t *trial) pauseServer(i int) error {
	return t.signal(i, "pause (SIGSTOP)", t.servers[i].g.Pause)
}

func (t *trial) resumeServer(i int) error {
	return t.signal(i, "resume (SIGCONT)", t.servers[i].g.Resume)
}

func (t *trial) signal(i int, what string, send func() error) error {
	err := send()
	if err == nil {
		t.rec.Arrow(record.ActorApp, serverName(i), what, "")
	}
	return err
}

func (t *trial) close() {
	t.rec.Finish()
	for _, p := range t.proxies {
		p.close()
	}
	for _, in := range t.servers {
		in.kill()
	}
}

// serverName is how the evidence names instance i.
func serverName(i int) string { return "server " + string(rune('A'+i)) }

func (t *trial) note(format string, args ...any) {
	t.res.Evidence = append(t.res.Evidence, fmt.Sprintf(format, args...))
}

// fail marks the check failed; the first reason is the one on the card.
func (t *trial) fail(format string, args ...any) {
	why := fmt.Sprintf(format, args...)
	if t.res.Verdict != Fail {
		t.res.Verdict, t.res.Why = Fail, why
	}
	t.note("FAIL: %s", why)
}

// failAs is fail with the lesson's mistake the evidence fits, and where
// to see it done right.
func (t *trial) failAs(m mistake, format string, args ...any) {
	if t.res.Verdict != Fail {
		t.res.Mistake, t.res.LooksLike, t.res.See = m.Name, m.Text, m.See
	}
	t.fail(format, args...)
}

// passed sets the card's line for a check that held (unless it failed).
func (t *trial) passed(format string, args ...any) {
	if t.res.Verdict == Pass {
		t.res.Why = fmt.Sprintf(format, args...)
	}
}

// unknown says the check could not tell: too slow a machine, or no way
// to see what it must see. It never overrides a failure.
func (t *trial) unknown(format string, args ...any) {
	if t.res.Verdict != Fail {
		t.res.Verdict, t.res.Why = Unknown, fmt.Sprintf(format, args...)
	}
	t.note("UNKNOWN: %s", fmt.Sprintf(format, args...))
}

// bound is how long a wait of d on a quiet machine may last on the
// machine as it is now (package pace).
func (t *trial) bound(d time.Duration) time.Duration { return pace.Stretch(d) }

// notApplicable says the check could not exercise what it is for.
func (t *trial) notApplicable(format string, args ...any) {
	if t.res.Verdict != Fail {
		t.res.Verdict, t.res.Why = NA, fmt.Sprintf(format, args...)
	}
}

func (t *trial) intent(label string, from, to, kobo int64, want int) {
	t.intents = append(t.intents, intent{label, from, to, kobo, want})
}

// Users, by their bearer tokens.
var tokens = map[string]string{"ada": "token-ada", "bola": "token-bola", "chidi": "token-chidi"}

// wire is what a check's recorder needs of the lesson's API to label what
// its proxy sees.
var wire = record.Wire{Tokens: tokens, Body: body, ErrorCode: func(body string) string { code, _ := errorOf(body); return code }}

// reply is what came back to the grader's client.
type reply struct {
	Status     int
	Replayed   bool
	RetryAfter string
	Body       string
	Lost       bool // no answer: the connection closed (or the proxy lost it)
	TransferID int64
}

// short is the status and whether it was a replay.
func (r reply) short() string {
	switch {
	case r.Lost:
		return "no answer"
	case r.Replayed:
		return strconv.Itoa(r.Status) + " replayed"
	}
	return strconv.Itoa(r.Status)
}

func (r reply) String() string {
	if r.Lost {
		return "no answer (the connection closed)"
	}
	s := strconv.Itoa(r.Status)
	if r.Replayed {
		s += " (Idempotent-Replayed: true)"
	}
	if r.RetryAfter != "" {
		s += " Retry-After: " + r.RetryAfter
	}
	body := r.Body
	if code, text := errorOf(body); len(body) > 160 && code != "" {
		// A long error body, such as problem details: what it says.
		body = code + ": " + text
	}
	if len(body) > 160 {
		body = body[:160] + "…"
	}
	return s + " " + body
}

// errorOf reads an error body of either shape the contract takes: the
// lesson's {"error":"code","message":"…"}, or RFC 9457 problem details
// ({"type","title","detail",…}, often with a code of its own). It
// returns "" when the body is neither.
func errorOf(body string) (code, text string) {
	var e struct {
		Error   any    `json:"error"`
		Message string `json:"message"`
		Code    any    `json:"code"`
		Type    string `json:"type"`
		Title   string `json:"title"`
		Detail  string `json:"detail"`
	}
	if json.Unmarshal([]byte(body), &e) != nil {
		return "", ""
	}
	for _, c := range []any{e.Error, e.Code} {
		if s, ok := c.(string); ok && s != "" {
			code = s
			break
		}
	}
	if code == "" {
		code = e.Type
	}
	if code == "" {
		code = e.Title
	}
	text = e.Message
	if text == "" {
		text = e.Detail
	}
	if text == "" {
		text = e.Title
	}
	return code, text
}

// definitive is an answer a client may act on: not a lost reply, not
// "in progress", not a server error.
func (r reply) definitive() bool {
	return !r.Lost && r.Status != 409 && r.Status != 429 && r.Status < 500
}

// request is one POST /transfers.
type request struct {
	server int    // which instance, through its proxy
	user   string // ada, bola or chidi
	key    string // "" sends no Idempotency-Key
	body   string
}

var httpClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxResponseHeaderBytes: maxBody}}

// send makes one request, records it in the evidence, and returns the reply.
func (t *trial) send(r request) reply {
	got := t.sendQuiet(r)
	t.note("%s", t.describe(r, got))
	return got
}

// sendFirst sends the first request under a key, which a good server
// answers with its definitive answer. A request slower than the key's
// lock may be fenced by the server itself: its lock expired before its
// commit, so its work rolled back and it said 409, as the lesson's
// design does on a slow machine. The grader then does what a client
// does, and resends with the same key until a definitive answer, which
// stands for the first. The request's own duration is the witness: a
// 409 that came sooner is the server's answer, and stands.
func (t *trial) sendFirst(r request) reply {
	start := time.Now()
	got := t.send(r)
	took := time.Since(start)
	if got.Status != 409 || took < t.cfg.LockTTL {
		return got
	}
	t.note("the request took %s, longer than the key's lock (LOCK_TTL_MS=%d): a 409 then is the server fencing its own late work, as it should; the grader resends it, as a client would", took.Round(100*time.Millisecond), t.cfg.LockTTL.Milliseconds())
	settled, _ := t.settle(r, t.cfg.LockTTL+t.bound(5*time.Second))
	t.note("%s", t.describe(r, settled))
	return settled
}

func (t *trial) describe(r request, got reply) string {
	key := "no key"
	if r.key != "" {
		key = "key " + client.KeyField(r.key, t.cfg.keys.quoted)
	}
	return fmt.Sprintf("POST /transfers to %s as %s, %s, %s → %s", serverName(r.server), r.user, key, r.body, got)
}

// sendQuiet is send without the evidence line (for storms), with the key
// in the form the server takes.
func (t *trial) sendQuiet(r request) reply {
	return t.post(r, t.cfg.keys.quoted)
}

// post sends r, its key bare or quoted.
func (t *trial) post(r request, quoted bool) reply {
	req, err := http.NewRequestWithContext(t.ctx, "POST", t.proxies[r.server].URL()+"/transfers", strings.NewReader(r.body))
	if err != nil {
		return reply{Lost: true}
	}
	req.GetBody = nil // every attempt is the grader's own: see proxy.ServeHTTP
	req.Header.Set("Authorization", "Bearer "+tokens[r.user])
	req.Header.Set("Content-Type", "application/json")
	if r.key != "" {
		req.Header.Set("Idempotency-Key", client.KeyField(r.key, quoted))
	}
	return do(req)
}

// keyForm is how the grader writes its keys for the server it grades:
// bare, as the lesson does (Idempotency-Key: grade-plain-0000001), unless
// the server refuses a bare key and takes the IETF draft's quoted form
// (Idempotency-Key: "grade-plain-0000001"). The first check of a run
// finds out (probeKeyForm); the rest of the run sends that form.
type keyForm struct {
	decided, quoted bool
}

// probeKeyForm asks the server which form of the key it takes, before
// the first check of a run: Bola asks to send more than she has, with
// her key bare, a request refused whatever the key (and that the CHECK on
// balances keeps from moving money). A 400 to it, where the same request
// with its key quoted is not a 400, means the server wants the draft's
// form. Anything else leaves the lesson's bare form, and says nothing.
func (t *trial) probeKeyForm() {
	k := t.cfg.keys
	k.decided = true
	t.rec.Line("the run's first check: which form of key does the server take?")
	r := request{user: "bola", key: "grade-keyform-00001", body: body(2, 1, 100_000_000)}
	bare := t.post(r, false)
	if bare.Lost || bare.Status != 400 {
		return
	}
	quoted := t.post(r, true)
	if quoted.Lost || quoted.Status == 400 {
		return
	}
	k.quoted = true
	t.note("POST /transfers as bola, key %s, %s → %s", r.key, r.body, bare)
	t.note("POST /transfers as bola, key %s, %s → %s", client.KeyField(r.key, true), r.body, quoted)
	t.note("the server refused the key sent bare and took it quoted, as the IETF draft writes it: the grader sends every key quoted from here on")
}

func do(req *http.Request) reply {
	resp, err := httpClient.Do(req)
	if err != nil {
		return reply{Lost: true}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return reply{Lost: true}
	}
	got := reply{Status: resp.StatusCode, Body: string(bytes.TrimSpace(b)),
		Replayed: strings.EqualFold(resp.Header.Get("Idempotent-Replayed"), "true"), RetryAfter: resp.Header.Get("Retry-After")}
	var receipt struct {
		TransferID int64 `json:"transferId"`
	}
	if json.Unmarshal(b, &receipt) == nil {
		got.TransferID = receipt.TransferID
	}
	return got
}

// get makes one GET through instance 0's proxy.
func (t *trial) get(user, path string) reply {
	req, err := http.NewRequestWithContext(t.ctx, "GET", t.proxies[0].URL()+path, nil)
	if err != nil {
		return reply{Lost: true}
	}
	req.Header.Set("Authorization", "Bearer "+tokens[user])
	got := do(req)
	t.note("GET %s as %s → %s", path, user, got)
	return got
}

// settle resends a request, as a good client does (after 409, 429, 5xx or
// no answer, honouring Retry-After), until a definitive answer or the
// bound. It returns the last reply and whether it was definitive.
func (t *trial) settle(r request, bound time.Duration) (reply, bool) {
	return t.settleWatch(r, bound, time.Time{})
}

// settleWatch is settle that also stops at a 409 to a request sent after
// expired (when that is not zero): a lock the server still holds then.
func (t *trial) settleWatch(r request, bound time.Duration, expired time.Time) (reply, bool) {
	deadline := time.Now().Add(bound)
	var got reply
	var tries []int // where each try begins in the diagram, which draws only the first and the last
	defer func() { t.rec.Fold(tries) }()
	for n := 0; ; n++ {
		tries = append(tries, t.rec.Mark())
		t.settledSent = time.Now()
		got = t.sendQuiet(r)
		if got.Status == 409 {
			t.settled409 = t.settledSent
		}
		if got.definitive() || time.Now().After(deadline) || t.ctx.Err() != nil ||
			got.Status == 409 && !expired.IsZero() && t.settledSent.After(expired) {
			break
		}
		wait := 200 * time.Millisecond
		if s, err := strconv.Atoi(got.RetryAfter); err == nil && s > 0 {
			wait = min(time.Duration(s)*time.Second, time.Second)
		}
		time.Sleep(wait)
		if n == 0 {
			t.note("%s (resending until a definitive answer, at most %s)", t.describe(r, got), bound.Round(100*time.Millisecond))
		}
	}
	t.note("%s", t.describe(r, got))
	return got, got.definitive()
}

// holdRow locks Ada's account row in a transaction of the grader's own,
// so that a transfer from her account waits on it. release ends it.
func (t *trial) holdRow() (pid int, release func()) {
	pid, release, err := t.hold("Ada's row", "SELECT … FOR UPDATE", "SELECT 1 FROM accounts WHERE id = 1 FOR UPDATE")
	t.must(err)
	return pid, release
}

// hold runs statements in a transaction of the grader's own and keeps it
// open, with the locks they took, until release; the diagram says what
// they lock, and how. It returns the session's pid, for
// pg_blocking_pids; an error of the statements (a lock_timeout, say) is
// returned with nothing held.
func (t *trial) hold(what, how string, stmts ...string) (pid int, release func(), err error) {
	conn, err := t.bank.Acquire(t.ctx)
	t.must(err)
	tx, err := conn.Begin(t.ctx)
	if err == nil {
		err = tx.QueryRow(t.ctx, "SELECT pg_backend_pid()").Scan(&pid)
	}
	for _, stmt := range stmts {
		if err == nil {
			_, err = tx.Exec(t.ctx, stmt)
		}
	}
	t.rec.Arrow(record.ActorApp, record.ActorDB, "lock "+what+" ("+how+")", "")
	done, held := false, err == nil
	release = func() {
		if !done {
			done = true
			if tx != nil {
				tx.Rollback(context.WithoutCancel(t.ctx))
			}
			conn.Release()
			if held {
				t.rec.Arrow(record.ActorApp, record.ActorDB, "ROLLBACK: lets go of "+what, "")
			}
		}
	}
	if err != nil {
		t.rec.Arrow(record.ActorDB, record.ActorApp, "not taken: "+record.Clean(err.Error()), "refused")
		release()
		return 0, nil, err
	}
	return pid, release, nil
}

// ownTables are the tables the server made for itself (its key table,
// and any other): every table in the database but the lesson's two.
func (t *trial) ownTables() []string {
	rows, err := t.db.Query(t.ctx, `SELECT format('%I.%I', n.nspname, c.relname)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind IN ('r', 'p') AND c.relpersistence <> 't'
		  AND n.nspname NOT IN ('information_schema', 'bank_witness') AND n.nspname NOT LIKE 'pg\_%'
		  AND NOT (n.nspname = 'public' AND c.relname IN ('accounts', 'transfers'))
		ORDER BY 1`)
	t.must(err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	t.must(err)
	return tables
}

// waitBlocked waits until a session waits on a lock held by session pid,
// and returns that session, or 0 if none did within the bound or the
// request was answered first.
func (t *trial) waitBlocked(pid int, p *pending, bound time.Duration) int {
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) && !p.answered() {
		var blocked int
		err := t.db.QueryRow(t.ctx, "SELECT pid FROM pg_stat_activity WHERE $1::int = ANY (pg_blocking_pids(pid)) LIMIT 1", pid).Scan(&blocked)
		if err == nil {
			return blocked
		}
		if err != pgx.ErrNoRows {
			t.must(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return 0
}

// waitGone waits, bounded, until session pid has ended.
func (t *trial) waitGone(pid int, bound time.Duration) bool {
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var alive bool
		t.must(t.db.QueryRow(t.ctx, "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)", pid).Scan(&alive))
		if !alive {
			return true
		}
	}
	return false
}

// pending is a request sent in the background.
type pending struct {
	r    request
	done chan struct{}
	got  reply
}

func (t *trial) async(r request) *pending {
	p := &pending{r: r, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.got = t.sendQuiet(r)
	}()
	return p
}

func (p *pending) answered() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// await waits, bounded, for a background request's reply and records it.
func (t *trial) await(p *pending, bound time.Duration) (reply, bool) {
	select {
	case <-p.done:
		t.note("%s", t.describe(p.r, p.got))
		return p.got, true
	case <-time.After(bound):
		t.note("%s", strings.TrimSuffix(t.describe(p.r, reply{}), "0 ")+fmt.Sprintf("no answer within %s", bound))
		return reply{}, false
	}
}

// count is how many transfers match an intent's accounts and amount.
func (t *trial) count(from, to, kobo int64) int {
	var n int
	t.must(t.bank.QueryRow(t.ctx, "SELECT count(*) FROM transfers WHERE from_account = $1 AND to_account = $2 AND amount_kobo = $3", from, to, kobo).Scan(&n))
	return n
}

// snapshot is the bank as the grader reads it.
type snapshot struct {
	balances  [3]int64 // Ada, Bola, Chidi
	total     int64
	transfers int
}

func readBank(ctx context.Context, db *pgxpool.Pool) (snapshot, error) {
	var s snapshot
	rows, err := db.Query(ctx, "SELECT id, balance_kobo FROM accounts ORDER BY id")
	if err != nil {
		return s, fmt.Errorf("reading the balances: %w", err)
	}
	var id, kobo int64
	_, err = pgx.ForEachRow(rows, []any{&id, &kobo}, func() error {
		if id >= 1 && id <= 3 {
			s.balances[id-1] = kobo
		}
		s.total += kobo
		return nil
	})
	if err != nil {
		return s, fmt.Errorf("reading the balances: %w", err)
	}
	if err := db.QueryRow(ctx, "SELECT count(*) FROM transfers").Scan(&s.transfers); err != nil {
		return s, fmt.Errorf("counting the transfers: %w", err)
	}
	return s, nil
}

// noteBank notes the bank as the grader read it, and draws it.
func (t *trial) noteBank(when string, s snapshot) {
	t.note("%s: %s", when, s.line())
	t.rec.Event("balances", s.line())
}

func (s snapshot) line() string {
	return fmt.Sprintf("Ada %s, Bola %s, Chidi %s | total %s | transfers %d",
		bank.Naira(s.balances[0]), bank.Naira(s.balances[1]), bank.Naira(s.balances[2]), bank.Naira(s.total), s.transfers)
}

// invariants are checked from the database at the end of every check,
// by the lab's one set of checks (bank/audit): the total is conserved,
// each balance is the seed plus the ledger, and each intent moved money
// as many times as it should (once, or never).
//
// A check that did not apply, or could not tell, may have left a request
// unfinished: then only the books are checked (conserved, agreeing),
// not how many times each intent moved money.
func (t *trial) invariants(partial bool) {
	after, err := readBank(t.ctx, t.bank)
	t.must(err)
	t.noteBank("after", after)
	books, err := audit.Read(t.ctx, t.bank, nil)
	t.must(err)
	intents := make([]audit.Intent, len(t.intents))
	for i, in := range t.intents {
		intents[i] = audit.Intent{Label: in.label, From: in.from, To: in.to, Kobo: in.kobo, Want: in.want}
	}
	checks := []audit.Finding{books.Conserved(), books.LedgerAgrees()}
	if !partial {
		checks = append(checks, books.OnceEach(intents, !t.ownCount))
	}
	for _, f := range audit.Broken(checks...) {
		for _, e := range f.Evidence {
			t.note("%s", e)
		}
		t.fail("%s: %s", f.Check, f.Detail)
	}
}
