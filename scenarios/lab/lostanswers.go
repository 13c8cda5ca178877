package lab

import (
	"math/rand/v2"
	"sync"
)

// LostAnswers is the lab's fault of losing answers after the work
// committed: the first First transfers' answers, then each with the
// probability Rate, drawn from Rand (seeded by the caller, so that a seed
// loses the same ones). Its Lose is api.Server's LoseAnswer: the story
// http's tunnel, and bank serve --lose-responses and --lose-rate.
type LostAnswers struct {
	First int64
	Rate  float64
	Rand  *rand.Rand

	mu   sync.Mutex
	seen int64
}

// Lose says whether the answer of the next transfer that ran is lost.
func (l *LostAnswers) Lose() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen++; l.seen <= l.First {
		return true
	}
	return l.Rate > 0 && l.Rand != nil && l.Rand.Float64() < l.Rate
}
