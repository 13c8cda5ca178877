package scenarios

import (
	"context"
	"io"

	"github.com/zudojs/bank/bank/pgserver"
)

// Mistake is one row of the lesson's table of mistakes: the same steps run
// twice, once with the mistake and once without, each in a fresh bank.
type Mistake struct {
	Name    string
	Summary string // the mistake, in the table's words
	Happens string // what it costs
	Fix     string // what the correct version does instead
	Explain map[string]string
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

// RunMistake runs the broken half, then the fixed half, then prints their
// checks side by side.
func RunMistake(ctx context.Context, cluster *pgserver.Cluster, m *Mistake, w io.Writer, o Options) (MistakeVerdict, error) {
	v := MistakeVerdict{Mistake: m.Name}
	var err error
	for _, broken := range []bool{true, false} {
		name, summary := m.Name+", broken", m.Summary+": "+m.Happens
		if !broken {
			name, summary = m.Name+", fixed", m.Fix
		}
		sc := &Scenario{Name: name, Summary: summary, Explain: m.Explain,
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
