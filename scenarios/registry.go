package scenarios

import "github.com/zudojs/bank/scenarios/lab"

// All is every scenario, in the lesson's order. Adding one: write its file,
// list it here once, run `go test ./scenarios -update`, read the new golden
// file as a learner would, and commit both.
var All = []*lab.Scenario{
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
	// The lesson's exercises.
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
