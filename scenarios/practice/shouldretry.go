package practice

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/zudojs/bank/scenarios"
)

// retryWant is each outcome's right answer and why: the reason is told
// when the answer given is the other one.
var retryWant = map[string]struct {
	retry bool
	why   string
}{
	"network": {true, "a network error leaves the outcome unknown: the request may never have arrived, or may have been done; a retry may succeed, and the idempotency key makes it safe (a done transfer is replayed, not repeated)"},
	"201":     {false, "201 means it is done: there is nothing left to succeed, and a retry would only have the stored answer replayed"},
	"400":     {false, "400 means the request itself is wrong (here: no valid Idempotency-Key): the same request fails the same way every time, so a retry cannot succeed"},
	"409":     {true, "409 means the first copy of this request is still in progress: a moment later it may be done, and with the same key the retry gets its stored answer, not a second transfer"},
	"422":     {false, "422 means the bank refused the request itself (too little money, a frozen account, or a key already used for another request): the same request fails the same way every time, so a retry cannot succeed"},
	"429":     {true, "429 means not now (too many requests): later it may succeed, and the idempotency key makes the retry safe"},
	"500":     {true, "a 5xx is the server failing, not the request: it may succeed later, and the idempotency key makes the retry safe"},
	"503":     {true, "a 5xx is the server failing, not the request (503: unavailable for now): it may succeed later, and the idempotency key makes the retry safe"},
}

func judgeShouldRetry(_ context.Context, _ evidence, _ Mode, printed []string) ([]Finding, error) {
	var out []Finding
	for i, outcome := range scenarios.RetryOutcomes {
		want := retryWant[outcome]
		out = append(out, lineFinding(printed, i, fmt.Sprintf("(%s) says %t", outcome, want.retry), func(l string) string {
			ws := words(l)
			// The first outcome the line names must be this one.
			named := slices.IndexFunc(ws, func(w string) bool { return w == "network" || len(w) == 3 && strings.Trim(w, "0123456789") == "" })
			if named < 0 || ws[named] != outcome {
				return fmt.Sprintf("this line is for %s: the outcomes, one a line, in the order %s", outcome, strings.Join(scenarios.RetryOutcomes, ", "))
			}
			yes := slices.ContainsFunc(ws[named+1:], func(w string) bool { return w == "true" || w == "yes" })
			no := slices.ContainsFunc(ws[named+1:], func(w string) bool { return w == "false" || w == "no" })
			switch {
			case yes == no:
				return "after the outcome print true or false"
			case yes != want.retry:
				return want.why
			}
			return ""
		}))
	}
	out = append(out, noMoreLines(printed, len(scenarios.RetryOutcomes), "eight lines and no more")...)
	return out, nil
}
