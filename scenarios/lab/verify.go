package lab

import (
	"context"
	"fmt"
	"strings"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/bank/audit"
)

// Result is one check's outcome.
type Result struct {
	Check      Check
	Holds      bool
	Expected   bool // whether it was expected to hold
	Detail     string
	Unexpected []string // intents that did not come out as the story says
	Name       string   // the check's name as printed
}

// Verdict is how a scenario ended.
type Verdict struct {
	Scenario   string
	Reproduced bool // every check came out as the lesson teaches
	ShowsBreak bool // the lesson breaks an invariant on purpose
	Results    []Result
}

// Differences names the checks that did not come out as the lesson teaches.
func (v Verdict) Differences() []string {
	var d []string
	for _, r := range v.Results {
		if len(r.Unexpected) > 0 {
			d = append(d, fmt.Sprintf("%q: %s", r.Name, strings.Join(r.Unexpected, "; ")))
			continue
		}
		if r.Holds != r.Expected {
			want := "hold"
			if !r.Expected {
				want = "break"
			}
			d = append(d, fmt.Sprintf("%q was expected to %s", r.Name, want))
		}
	}
	return d
}

func (l *Lab) verify(ctx context.Context, sc *Scenario) (Verdict, error) {
	v := Verdict{Scenario: sc.Name, Reproduced: true}
	add := func(c Check, holds bool, detail string) {
		r := Result{Check: c, Holds: holds, Expected: !sc.breaks(c), Detail: detail, Name: checkNames[c]}
		v.Results = append(v.Results, r)
		if r.Holds != r.Expected {
			v.Reproduced = false
		}
	}
	books, err := audit.Read(ctx, l.DB, nil)
	if err != nil {
		return v, err
	}
	// Money may cross the bank's edge (deposits in, payouts out), but only
	// with a record: the total must be the seed plus what came in, minus
	// what went out.
	kept := books.Conserved()
	add(TotalKept, kept.Holds, kept.Detail)
	if kept.Check != checkNames[TotalKept] {
		v.Results[len(v.Results)-1].Name = kept.Check
	}
	agrees := books.LedgerAgrees()
	add(LedgerAgrees, agrees.Holds, agrees.Detail)

	var details []string
	var unexpected []string
	expectBreak := false
	for _, in := range l.intents {
		n, err := in.count(ctx)
		if err != nil {
			return v, fmt.Errorf("counting %s: %w", in.label, err)
		}
		expectBreak = expectBreak || in.broken
		if n != in.want {
			details = append(details, fmt.Sprintf("%s: %s (should be %s)", in.label, bank.Times(n), bank.Times(in.want)))
		}
		if (n != in.want) != in.broken {
			state := "held"
			if n != in.want {
				state = "broke"
			}
			unexpected = append(unexpected, fmt.Sprintf("%s %s (%s)", in.label, state, bank.Times(n)))
		}
	}
	holds := len(details) == 0
	r := Result{Check: OnceEach, Holds: holds, Expected: !expectBreak && !sc.breaks(OnceEach), Detail: strings.Join(details, "; "), Name: checkNames[OnceEach]}
	r.Unexpected = unexpected
	v.Results = append(v.Results, r)
	if r.Holds != r.Expected || len(unexpected) > 0 {
		v.Reproduced = false
	}
	for _, r := range v.Results {
		v.ShowsBreak = v.ShowsBreak || !r.Expected
	}
	return v, nil
}
