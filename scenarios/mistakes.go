package scenarios

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/bank/pgserver"
	"github.com/zudojs/bank/idem"
)

// Mistake is one row of the lesson's table of mistakes: the same steps run
// twice, once with the mistake and once without, each in a fresh bank.
type Mistake struct {
	Name    string
	Summary string // the mistake, in the table's words
	Happens string // what it costs
	Fix     string // what the correct version does instead
	Explain map[string]string
	// Blind says why a money check holds although the mistake did its
	// damage (see Scenario.Blind).
	Blind map[Check]string
	// Steps tells the story; broken says which half is running. Intents
	// that the mistake breaks are declared with BrokenIf(broken).
	Steps func(ctx context.Context, lab *Lab, broken bool) error
}

// Mistakes, in the order of the lesson's table.
var Mistakes = []*Mistake{
	NewKeyPerAttempt,
	MemoryKeys,
	SecondTransaction,
	UnscopedKeys,
	NoFingerprint,
	Replay500,
	NoLockExpiry,
	NoFencing,
}

// LookupMistake finds a mistake by name.
func LookupMistake(name string) (*Mistake, bool) {
	for _, m := range Mistakes {
		if m.Name == name {
			return m, true
		}
	}
	return nil, false
}

// MistakeNames lists the mistakes' names in order.
func MistakeNames() []string {
	names := make([]string, len(Mistakes))
	for i, m := range Mistakes {
		names[i] = m.Name
	}
	return names
}

// BrokenIf marks the intent as broken by the story when broken is true.
func (i *Intent) BrokenIf(broken bool) *Intent {
	if broken {
		i.broken = true
	}
	return i
}

// MistakeVerdict is how both halves ended.
type MistakeVerdict struct {
	Mistake       string
	Broken, Fixed Verdict
}

// Reproduced: the mistake did its damage and the fix held.
func (v MistakeVerdict) Reproduced() bool {
	return v.Broken.Reproduced && v.Broken.ShowsBreak && v.Fixed.Reproduced && !v.Fixed.ShowsBreak
}

// Why the money checks hold while a mistake does its damage: every
// mistake of the lesson's table breaks "once each", in one of three ways.
var (
	twiceBlind = map[Check]string{
		TotalKept:    "a transfer made twice still conserves money",
		LedgerAgrees: "both transfers are recorded, so the books agree",
	}
	neverBlind = map[Check]string{
		TotalKept:    "a transfer that never happens moves no money",
		LedgerAgrees: "nothing moved, so the books agree",
	}
	falseBlind = map[Check]string{
		TotalKept:    "the false success moved no money",
		LedgerAgrees: "nothing moved for it, so the books agree",
	}
)

// RunMistake runs the broken half, then the fixed half, then prints their
// checks side by side.
func RunMistake(ctx context.Context, cluster *pgserver.Cluster, m *Mistake, w io.Writer, o Options) (MistakeVerdict, error) {
	v := MistakeVerdict{Mistake: m.Name}
	var err error
	for _, broken := range []bool{true, false} {
		name, summary := m.Name+", broken", m.Summary+": "+m.Happens
		fix, prevents := "the fixed half below", ""
		if !broken {
			name, summary = m.Name+", fixed", m.Fix
			fix, prevents = "", "the damage of the broken half above"
		}
		sc := &Scenario{Name: name, Summary: summary, Explain: m.Explain, Fix: fix, Prevents: prevents, Blind: m.Blind,
			Run: func(ctx context.Context, lab *Lab) error { return m.Steps(ctx, lab, broken) }}
		var half Verdict
		if half, err = Run(ctx, cluster, sc, w, o); err != nil {
			return v, err
		}
		if broken {
			v.Broken = half
		} else {
			v.Fixed = half
		}
	}
	newPrinter(w, &Scenario{Name: m.Name}, o).sideBySide(v)
	return v, nil
}

// crashStory: server A's session is killed at the hook's point; then a
// retry arrives at each of the times given. The broken half uses the
// leaky store with the mistake, the fixed half the real one.
func crashStory(mistake lockMistake, step string, at func(crash func(context.Context)) api.Hooks, retries ...time.Duration) func(context.Context, *Lab, bool) error {
	return func(ctx context.Context, lab *Lab, broken bool) error {
		lab.Intent("Ada's one tap", 1, 2, 1_000_000, 1).BrokenIf(broken)
		server, err := lab.Session(ctx)
		if err != nil {
			return err
		}
		hooks := at(func(ctx context.Context) { lab.Kill(ctx, server) })
		keys := lab.Keys(&idem.Store{LockTTL: 30 * time.Second})
		var first, retry api.Handler = &api.Transfers{DB: server, Keys: keys, Hooks: hooks}, &api.Transfers{DB: lab.DB, Keys: keys}
		if broken {
			first = &leakyStore{db: server, mistake: mistake, ttl: 30 * time.Second, hooks: hooks}
			retry = &leakyStore{db: lab.DB, mistake: mistake, ttl: 30 * time.Second}
		}
		lab.Step(step)
		return crashThenRetry(ctx, lab, first, retry, retries...)
	}
}

// crashThenRetry: the first delivery dies at its hook; retries follow at
// the given times after it.
func crashThenRetry(ctx context.Context, lab *Lab, first, retry api.Handler, at ...time.Duration) error {
	body := []byte(adaPaysBola)
	const key = "crash-demo-00000000001"
	first, retry = lab.Server("server A", first), lab.Server("server B", retry)
	_, err := first.Handle(ctx, api.Call{UserID: 1, Key: key, Body: body, Now: lab.Clock.At(0)})
	if err == nil {
		return errors.New("the first delivery should have crashed")
	}
	lab.Say("server A claimed the key and crashed")
	for _, d := range at {
		r, err := retry.Handle(ctx, api.Call{UserID: 1, Key: key, Body: body, Now: lab.Clock.At(d)})
		if err != nil {
			return err
		}
		lab.Reply(r, "retry after %s: %d %s%s", human(d), r.Status, transferLabel(r.Body), replayedNote(r.Replayed))
	}
	return lab.Balances(ctx, "")
}
