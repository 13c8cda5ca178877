package lab

import (
	"context"

	"github.com/zudojs/bank/scenarios/lab/mistakes"
	"github.com/zudojs/bank/scenarios/lab/pgserver"
)

// Mistake is one row of the lesson's table of mistakes: the same steps run
// twice, once with the mistake and once without, each in a fresh bank.
type Mistake struct {
	// Mistake is its entry in the catalogue: its name and its summary in
	// the table's words.
	mistakes.Mistake
	Happens string // what it costs
	Fix     string // what the correct version does instead
	// Why says how the mistake does its damage, and Holds why the fix
	// prevents it: --explain says them under each half's title, so that
	// the mistake reads right without the lesson.
	Why, Holds string
	Explain    map[string]string
	// Blind says why a money check holds although the mistake did its
	// damage (see Scenario.Blind).
	Blind map[Check]string
	// Steps tells the story; broken says which half is running. Intents
	// that the mistake breaks are declared with BrokenIf(broken).
	Steps func(ctx context.Context, lab *Lab, broken bool) error
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

// RunMistake runs the broken half, then the fixed half, each as a
// scenario of its own, then gives both verdicts (a "mistake" event).
func RunMistake(ctx context.Context, clones *pgserver.Clones, m *Mistake, o Options) (MistakeVerdict, error) {
	v := MistakeVerdict{Mistake: m.Name}
	var err error
	for _, broken := range []bool{true, false} {
		name, summary := m.Name+", broken", m.Summary+": "+m.Happens
		fix, prevents := m.Fix+" (the fixed half below)", ""
		about := "why it goes wrong: " + m.Why + "\nthe fix, in the second half: " + m.Fix + "."
		if !broken {
			name, summary = m.Name+", fixed", m.Fix
			fix, prevents = "", "the damage of the broken half above"
			about = "why it holds: " + m.Holds
		}
		sc := &Scenario{Name: name, Summary: summary, Explain: m.Explain, About: about, Fix: fix, Prevents: prevents, Blind: m.Blind,
			Run: func(ctx context.Context, lab *Lab) error { return m.Steps(ctx, lab, broken) }}
		var half Verdict
		if half, err = Run(ctx, clones, sc, o); err != nil {
			return v, err
		}
		if broken {
			v.Broken = half
		} else {
			v.Fixed = half
		}
	}
	if o.Sink != nil {
		o.Sink.Event(Event{Kind: "mistake", Scenario: &Scenario{Name: m.Name}, Mistake: &v})
	}
	return v, nil
}
