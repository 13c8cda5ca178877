// Package verdict is how a check of the graders of the learner's other
// programs (bank grade client, webhook, payout) writes its line of the
// card: the evidence as it comes (Note), and one verdict (Pass, Fail,
// Unknown) that ends the check there and then, however deep in it.
package verdict

import (
	"fmt"

	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/scenarios/lab/mistakes"
)

// Line is one check's line of the card, being written.
type Line struct {
	Result grade.Result
	done   bool
}

// ended is what a verdict panics with, to end the check; Run recovers it.
type ended struct{}

// New starts the line of a check.
func New(name, title string, required bool, see string) Line {
	return Line{Result: grade.Result{Name: name, Title: title, Required: required, See: see, Writes: -1, Evidence: []string{}}}
}

// Run runs check, which ends with a verdict, or returns (it held: a
// pass), and says whether a verdict ended it.
func (l *Line) Run(check func()) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(ended); !ok {
				panic(r)
			}
		}
	}()
	check()
	if !l.done {
		l.Result.Verdict, l.Result.Why = grade.Pass, "held"
	}
}

// Note adds a line of evidence.
func (l *Line) Note(format string, args ...any) {
	l.Result.Evidence = append(l.Result.Evidence, fmt.Sprintf(format, args...))
}

func (l *Line) end(v, why string) {
	if !l.done {
		l.done = true
		l.Result.Verdict, l.Result.Why = v, why
	}
	panic(ended{})
}

// Fail ends the check failed; m is the mistake the evidence fits, or nil.
func (l *Line) Fail(m *mistakes.Mistake, format string, args ...any) {
	if m != nil && !l.done {
		l.Result.Mistake, l.Result.LooksLike, l.Result.See = m.Name, m.Diagnosis, m.See
	}
	l.end(grade.Fail, fmt.Sprintf(format, args...))
}

// Pass ends the check passed.
func (l *Line) Pass(format string, args ...any) { l.end(grade.Pass, fmt.Sprintf(format, args...)) }

// Unknown ends the check unable to tell.
func (l *Line) Unknown(format string, args ...any) {
	l.end(grade.Unknown, fmt.Sprintf(format, args...))
}

// Must fails the check when err is not nil: the grader could not go on.
func (l *Line) Must(err error) {
	if err != nil {
		l.Fail(nil, "the grader could not go on: %v", err)
	}
}
