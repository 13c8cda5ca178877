// Package lab is the harness every story runs on: its database, clock,
// steps and verdict, recorded as one stream of events that package render
// draws; each scenario file of package scenarios tells its story on it.
package lab

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab/pgserver"
	"github.com/zudojs/bank/scenarios/lab/procs"
)

// Scenario is one lesson.
type Scenario struct {
	Name    string
	Summary string // one line: what it shows
	Section string // the lesson's section it reproduces
	// ShowsBroken are the invariants this lesson shows breaking; all
	// others must hold.
	ShowsBroken []Check
	// Explain is said before each step with --explain, keyed by step title.
	Explain map[string]string
	// About is said under the title with --explain: what the story is
	// about, before its first step (a mistake's halves say what goes
	// wrong and why, and what the fix does).
	About string
	Run   func(ctx context.Context, lab *Lab) error

	// What the verdict points to: for a lesson that shows a failure, where
	// its fix is shown; for one that shows a fix, the failure it prevents.
	Fix, Prevents string
	// Blind says, for a check that holds although the lesson's failure
	// happened, why that check cannot see it.
	Blind map[Check]string
	// Here says what a check that holds covers in this story, where that
	// is not a transfer of money (an exercise on orders or keys).
	Here map[Check]string
}

// Check is one invariant the lab verifies after every scenario.
type Check int

const (
	TotalKept    Check = iota // the bank's total stays ₦75,000
	LedgerAgrees              // every balance is its opening balance plus its recorded transfers
	OnceEach                  // each intent took effect exactly as often as it should: once, or never if refused
)

var checkNames = map[Check]string{
	TotalKept:    "total stays " + bank.Naira(bank.SeedTotal()),
	LedgerAgrees: "balances match the ledger",
	OnceEach:     "each intent happens once",
}

// breaks says whether the scenario shows check c breaking.
func (s *Scenario) breaks(c Check) bool {
	for _, b := range s.ShowsBroken {
		if b == c {
			return true
		}
	}
	return false
}

// Lab is everything a scenario touches: its own database, a clock and a
// random source that are fake and seeded, and the transcript. Nothing
// else reaches a scenario.
type Lab struct {
	DB    *pgxpool.Pool
	URL   string // the scenario database, for extra named sessions
	Clock *Clock
	Rand  *rand.Rand

	sink      Sink
	mu        sync.Mutex // the sink hears from more than one goroutine
	states    bool       // the pictures want the bank and keys after each step
	step      string
	intents   []*Intent
	sessions  []*pgx.Conn
	bank      string // the bank binary, for scenarios that start servers
	processes []*procs.Child
	running   sync.WaitGroup    // the story's own goroutines (Go)
	lanes     map[string]string // host:port -> the server's lane (Lane)
}

// Intent is one user intent (or one event, or one side effect) and how
// many times its effect should have happened.
type Intent struct {
	label  string
	want   int
	count  func(ctx context.Context) (int, error)
	broken bool
}

// ShownBroken marks an intent that this story breaks on purpose (the
// broken half of a side-by-side): the lesson is reproduced only if this
// intent's count is wrong and every unmarked one is right.
func (i *Intent) ShownBroken() *Intent { i.broken = true; return i }

// Step starts a step of the lesson: with --explain its note is printed,
// with --step the lab waits for Enter first.
func (l *Lab) Step(title string) { l.newStep(title, false) }

// Part starts a step that is one part of a lesson told in parts (the
// broken way, the safe way): its title is printed in the transcript.
func (l *Lab) Part(title string) { l.newStep(title, true) }

func (l *Lab) newStep(title string, part bool) {
	if l.step != "" {
		l.snapshotState(context.Background())
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.step = title
	l.emitLocked(Event{Kind: "step", Step: title, Part: part, Text: title})
}

// Say prints one line of the transcript.
func (l *Lab) Say(format string, args ...any) {
	l.emit(Event{Kind: "line", Text: fmt.Sprintf(format, args...)})
}

// SayVerbatim prints a line of the transcript that the lesson itself
// prints, word for word (PostgreSQL's error, say): it is never folded to
// the transcript's width.
func (l *Lab) SayVerbatim(format string, args ...any) {
	l.emit(Event{Kind: "line", Text: fmt.Sprintf(format, args...), Verbatim: true})
}

// Reply prints one line that reports a response; --json also gets the
// response itself.
func (l *Lab) Reply(r idem.Response, format string, args ...any) {
	l.emit(Event{Kind: "response", Text: fmt.Sprintf(format, args...), Response: &Response{Status: r.Status, Replayed: r.Replayed, Body: r.Body}})
}

// Balances prints the lesson's balances line, after a label if any.
func (l *Lab) Balances(ctx context.Context, label string) {
	s, err := bank.Read(ctx, l.DB)
	l.Must(err)
	l.emit(Event{Kind: "balances", Text: strings.TrimSpace(label + " " + s.Line()), Balances: &s})
}

// Must ends the story when err is not nil: the harness broke (a query
// failed, a server would not start), which is not the lesson's outcome.
// The run returns err. Call it from the story itself, never from a
// goroutine or a hook the story started.
func (l *Lab) Must(err error) {
	if err != nil {
		panic(abort{err})
	}
}

// abort carries the error that ended a story, from Must to Run.
type abort struct{ err error }

// tell runs a story; Must's error ends it.
func tell(ctx context.Context, l *Lab, story func(context.Context, *Lab) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			a, ok := r.(abort)
			if !ok {
				panic(r)
			}
			err = a.err
		}
	}()
	return story(ctx, l)
}

// Query reads one value from the scenario's database into each of dest,
// for a line that says what the database holds.
func (l *Lab) Query(ctx context.Context, sql string, args []any, dest ...any) {
	l.Must(l.DB.QueryRow(ctx, sql, args...).Scan(dest...))
}

// Count reads one number from the scenario's database.
func (l *Lab) Count(ctx context.Context, sql string, args ...any) int64 {
	var n int64
	l.Query(ctx, sql, args, &n)
	return n
}

// Exec runs statements on the scenario's database, for the story's own
// setting up (a frozen account, an old key).
func (l *Lab) Exec(ctx context.Context, sql string, args ...any) {
	_, err := l.DB.Exec(ctx, sql, args...)
	l.Must(err)
}

// Intent declares one user intent and how many transfers it should cause
// (1, or 0 when the bank must refuse it). The OnceEach check counts the
// transfers with its accounts and amount.
func (l *Lab) Intent(label string, from, to, amountKobo int64, want int) *Intent {
	return l.Effect(label, want, l.Counting("SELECT count(*) FROM transfers WHERE from_account = $1 AND to_account = $2 AND amount_kobo = $3",
		from, to, amountKobo))
}

// Effect declares an effect that must happen want times (an SMS
// delivered, a payout made, an event applied); count reads how many times
// it really did, from the database or from the fake that received it.
func (l *Lab) Effect(label string, want int, count func(ctx context.Context) (int, error)) *Intent {
	in := &Intent{label: label, want: want, count: count}
	l.intents = append(l.intents, in)
	return in
}

// Counting is an effect's count (see Effect): the number query reads
// from the scenario's database, such as a count(*) of the rows the
// effect leaves.
func (l *Lab) Counting(query string, args ...any) func(context.Context) (int, error) {
	return func(ctx context.Context) (n int, err error) {
		err = l.DB.QueryRow(ctx, query, args...).Scan(&n)
		return n, err
	}
}

// Session opens a named session: a connection of its own, for a story with
// more than one server or client, with settings run first (such as SET
// lock_timeout). It is closed when the scenario ends.
func (l *Lab) Session(ctx context.Context, settings ...string) *pgx.Conn {
	c, err := pgx.Connect(ctx, l.URL)
	l.Must(err)
	l.sessions = append(l.sessions, c)
	for _, s := range settings {
		_, err := c.Exec(ctx, s)
		l.Must(err)
	}
	return c
}

// Clock is the lab's fake clock. It starts at the lesson's moment and
// moves only when a scenario moves it. Servers and clients in one story
// share it, so it is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// LessonStart is when every scenario's clock starts.
var LessonStart = time.Date(2026, 9, 24, 10, 0, 0, 0, time.UTC)

// Nightly is when the lesson's nightly clean-up of old keys runs: 03:00
// (UTC) on the lesson's day.
var Nightly = LessonStart.Truncate(24 * time.Hour).Add(3 * time.Hour)

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// At sets the clock to d after the lesson's start and returns that time.
func (c *Clock) At(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = LessonStart.Add(d)
	return c.now
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Options say where a run's events go and what the harness keeps.
type Options struct {
	// Sink hears every event of the run as it happens (package render
	// draws them: a transcript, JSON lines, a diagram, a page).
	Sink Sink
	// States adds, at each step's end, the bank and its keys (a "state"
	// event), for the pictures that show them.
	States bool
	// Keep leaves the scenario's database in place; it is passed to Kept.
	Keep bool
	Kept func(db *pgserver.Database)
	// Bank is the bank binary, for scenarios that start bank serve
	// processes of their own.
	Bank string
}

// Run runs one scenario in a fresh database and checks the invariants.
// An error means the harness broke, not that the lesson's failure
// happened: that is the verdict's business.
func Run(ctx context.Context, clones *pgserver.Clones, sc *Scenario, o Options) (Verdict, error) {
	db, err := clones.NewDatabase(ctx, sc.Name)
	if err != nil {
		return Verdict{}, err
	}
	defer func() {
		if o.Keep && o.Kept != nil {
			o.Kept(db)
			return
		}
		db.Drop(context.WithoutCancel(ctx))
	}()
	pool, err := pgxpool.New(ctx, db.URL)
	if err != nil {
		return Verdict{}, err
	}
	defer pool.Close()
	lab := &Lab{
		DB:     pool,
		URL:    db.URL,
		Clock:  &Clock{now: LessonStart},
		Rand:   rand.New(rand.NewPCG(2026, 924)),
		sink:   o.Sink,
		states: o.States,
		bank:   o.Bank,
	}
	defer func() {
		for _, p := range lab.processes {
			p.Stop()
		}
		for _, s := range lab.sessions {
			s.Close(context.WithoutCancel(ctx))
		}
	}()
	lab.emit(Event{Kind: "scenario", Scenario: sc})
	// The story's context ends with the story, and the lab waits for what
	// the story started (Go): a story cut short (Ctrl-C, a failed step)
	// leaves no request waiting at a hook, nor a session in use.
	story, end := context.WithCancel(ctx)
	err = tell(story, lab, sc.Run)
	end()
	lab.running.Wait()
	if err != nil {
		return Verdict{}, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	lab.snapshotState(ctx)
	v, err := lab.verify(ctx, sc)
	if err != nil {
		return Verdict{}, err
	}
	lab.emit(Event{Kind: "verdict", Verdict: &v})
	return v, nil
}

// KillSession ends a named session the way a crash would: PostgreSQL
// terminates its backend, rolling back whatever it had open. It returns
// once the backend is gone.
func (l *Lab) KillSession(ctx context.Context, session *pgx.Conn) error {
	pid := session.PgConn().PID()
	if _, err := l.DB.Exec(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
		return err
	}
	for i := 0; i < 500; i++ { // wait for the signal to land, not for a time
		var alive bool
		if err := l.DB.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)", pid).Scan(&alive); err != nil {
			return err
		}
		if !alive {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("backend %d did not end", pid)
}

// Serve starts `bank serve` as a real process on a loopback port, serving
// the scenario's database in place. It is stopped when the scenario ends,
// or earlier with Stop.
func (l *Lab) Serve(ctx context.Context, args ...string) *procs.Child {
	if l.bank == "" {
		l.Must(fmt.Errorf("this scenario starts bank serve processes: the lab needs the bank binary (Options.Bank)"))
	}
	p, err := StartServe(ctx, l.bank, l.URL, args...)
	if p != nil {
		l.processes = append(l.processes, p)
	}
	l.Must(err)
	return p
}
