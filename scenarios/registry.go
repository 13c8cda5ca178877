package scenarios

import (
	"slices"

	"github.com/zudojs/bank/scenarios/lab"
)

// All is every scenario, in the lesson's order: the lessons, then the
// exercises' solutions. Adding one: write its file, list it here once, run
// `go test ./scenarios -update`, read the new golden file as a learner
// would, and commit both.
var All = slices.Concat(Lessons, Solutions)

// Lessons are the stories `bank scenario all` (and make demo) runs.
var Lessons = []*lab.Scenario{
	Naive,
	Atomic,
	Rules,
	Race,
	LostResponse,
	UnknownOutcome,
	RetrySafe,
	KeyMisuse,
	Concurrent,
	Crash,
	ShortLock,
	HTTP,
	Backoff,
	// Idempotency end to end.
	Outbox,
	Rails,
	OneKey,
	Webhook,
	Consumer,
	LedgerKey,
	Retention,
}

// Solutions play the lesson's three exercises solved. They run by name
// only: in `bank scenario all` they would give each exercise's answer
// away (should-retry's table of true and false, the clean-up's WHERE in
// words) before the learner has tried it with bank exercise.
var Solutions = []*lab.Scenario{
	Ship,
	Cleanup,
	ShouldRetry,
}

// Lookup finds a scenario by name.
func Lookup(name string) (*lab.Scenario, bool) {
	for _, s := range All {
		if s.Name == name {
			return s, true
		}
	}
	return nil, false
}

// Names lists the scenarios' names in order.
func Names() []string {
	names := make([]string, len(All))
	for i, s := range All {
		names[i] = s.Name
	}
	return names
}
