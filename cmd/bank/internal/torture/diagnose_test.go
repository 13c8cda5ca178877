package torture

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zudojs/bank/bank/audit"
	"github.com/zudojs/bank/scenarios/lab/mistakes"
)

// A history made by hand: attempts (at replica, in its life, of a kind,
// sent and ended at a millisecond) and the transfers the ledger holds.

func at(replica, life int, kind string, sent, done int) attempt {
	return attempt{Replica: replica, Life: life, Kind: kind, sent: time.Duration(sent) * time.Millisecond, done: time.Duration(done) * time.Millisecond}
}

// made is an attempt answered 201 with transfer id.
func made(a attempt, id int64) attempt {
	a.Status, a.Body = 201, fmt.Sprintf(`{"transferId":%d,"from":4,"to":5,"amountKobo":100}`, id)
	return a
}

func replayed(a attempt, id int64) attempt {
	a = made(a, id)
	a.Replayed = true
	return a
}

func noAnswer(a attempt) attempt { a.Network = "no answer"; return a }

func hist(key string, ids []int64, as ...attempt) *intent {
	in := &intent{key: key, resolved: true}
	for _, id := range ids {
		in.moved = append(in.moved, audit.Transfer{ID: id, From: 4, To: 5, Kobo: 100})
	}
	for _, a := range as {
		a.Key = key
		in.attempts = append(in.attempts, a)
		if definitive(a) && (a.Kind != "lookup" || a.State == "completed") {
			in.replies = append(in.replies, a)
		}
	}
	return in
}

// sharedKeys is an intent run at replica 0 and replayed by replica 1: the
// replicas share their keys.
func sharedKeys() *intent {
	return hist("torture-1-000900", []int64{90}, made(at(0, 0, "send", 0, 5), 90), replayed(at(1, 0, "duplicate", 10, 12), 90))
}

// localKeys is an intent replayed only by the replica that ran it: keys
// are kept, but nothing shows the other replica sees them.
func localKeys() *intent {
	return hist("torture-1-000901", []int64{91}, made(at(0, 0, "send", 0, 5), 91), replayed(at(0, 0, "duplicate", 10, 12), 91))
}

// TestDiagnosisFromTheHistory: each mistake is named from its evidence
// alone, and each only where its evidence is; where nothing fits, the
// diagnosis says what was seen.
func TestDiagnosisFromTheHistory(t *testing.T) {
	t.Parallel()
	ttl := time.Second
	for _, c := range []struct {
		name    string
		intents []*intent
		stuck   []string
		want    string // the mistake, "" for none
		says    string // in its line
	}{
		{"no-keys", []*intent{
			hist("torture-1-000001", []int64{1, 2}, made(at(0, 0, "send", 0, 5), 1), made(at(1, 0, "retry", 10, 15), 2)),
			hist("torture-1-000002", []int64{3}, made(at(0, 0, "send", 0, 5), 3)),
		}, nil, "no-keys", "no copy of any request was replayed or answered 409"},
		{"keys-not-shared", []*intent{
			hist("torture-1-000001", []int64{1, 2}, made(at(0, 0, "send", 0, 5), 1), made(at(1, 0, "retry", 10, 15), 2)),
			localKeys(),
		}, nil, "keys-not-shared", "no replica ever replayed a key the other had run"},
		{"memory-keys", []*intent{
			hist("torture-1-000001", []int64{1, 2}, made(at(0, 0, "send", 0, 5), 1), made(at(0, 1, "settle", 900, 905), 2)),
			hist("torture-1-000002", []int64{3, 4}, made(at(0, 0, "send", 0, 5), 3), made(at(1, 0, "retry", 10, 15), 4)),
			localKeys(),
		}, nil, "memory-keys", "after the replica was killed and restarted"},
		{"no-keys, though keys are kept", []*intent{
			hist("torture-1-000001", []int64{1, 2}, made(at(0, 0, "send", 0, 5), 1), made(at(0, 0, "duplicate", 10, 15), 2)),
			sharedKeys(),
		}, nil, "no-keys", "had answered the first before the second came"},
		{"no-fencing", []*intent{
			hist("torture-1-pause-000003", []int64{5, 6}, made(at(0, 0, "pause", 0, 3000), 6), made(at(1, 0, "pause", 1200, 1300), 5)),
			sharedKeys(),
		}, nil, "no-fencing", "after the lock TTL of 1s"},
		{"check-then-insert", []*intent{
			hist("torture-1-000004", []int64{7, 8}, made(at(0, 0, "concurrent", 100, 110), 7), made(at(1, 0, "concurrent", 100, 112), 8)),
			sharedKeys(),
		}, nil, "check-then-insert", "two copies sent at once"},
		{"lock-ttl-ignored", []*intent{
			hist("torture-1-000005", []int64{9, 10}, made(at(0, 0, "send", 0, 900), 9), made(at(1, 0, "retry", 500, 520), 10)),
			sharedKeys(),
		}, nil, "lock-ttl-ignored", "before its lock TTL of 1s"},
		{"second-transaction", []*intent{
			hist("torture-1-kill-000006", []int64{11, 12}, noAnswer(at(0, 0, "kill", 0, 100)), made(at(1, 0, "retry", 1200, 1210), 12)),
			sharedKeys(),
		}, nil, "second-transaction", "transfer 11 was made, but the request the kill caught"},
		{"replay-500", []*intent{
			hist("torture-1-session-000007", []int64{13},
				attempt{Replica: 0, Kind: "session-kill", Status: 500, Body: `{"error":"internal_error"}`},
				attempt{Replica: 0, Kind: "retry", Status: 500, Body: `{"error":"internal_error"}`, Replayed: true}),
		}, nil, "replay-500", "500 internal_error; its retry got it back marked Idempotent-Replayed: true"},
		{"no-fingerprint", []*intent{
			hist("torture-1-000008", []int64{14}, made(at(0, 0, "send", 0, 5), 14),
				made(at(0, 0, "changed-body", 10, 12), 14)),
		}, nil, "no-fingerprint", "the same key with the amount changed got the first request's answer"},
		{"replay-differs", []*intent{
			hist("torture-1-000009", []int64{15}, made(at(0, 0, "send", 0, 5), 15),
				attempt{Replica: 1, Kind: "duplicate", Status: 201, Body: `{"transferId":15}`, Replayed: true}),
		}, nil, "replay-differs", "a replay (Idempotent-Replayed: true) answered 201 {\"transferId\":15}"},
		{"no-lock-expiry", []*intent{sharedKeys()}, []string{"torture-1-kill-000010"}, "no-lock-expiry", "torture-1-kill-000010"},
		{"nothing fits", []*intent{sharedKeys()}, nil, "", "fit none of the lesson's mistakes; seen: 1 transfers belong to no intent"},
	} {
		d := diagnose(c.intents, c.stuck, ttl, []string{"1 transfers belong to no intent"}, nil)
		if d.Mistake != c.want || !strings.Contains(d.Why, c.says) {
			t.Errorf("%s: diagnosed %q: %s\nwant %q, saying %q", c.name, d.Mistake, d.Why, c.want, c.says)
		}
		if c.want != "" && d.See == "" {
			t.Errorf("%s: no command to see the mistake", c.name)
		}
	}
}

// TestMistakeNames: every mistake the diagnosis names (read from its
// source, at each mistake("NAME", ...) and in the table of ways) is in the
// lab's catalogue, with what torture sees of it.
func TestMistakeNames(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("diagnose.go")
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile(`mistake\("([a-z0-9-]+)"|\{by[A-Za-z]+, "([a-z0-9-]+)"\}`).FindAllStringSubmatch(string(src), -1)
	if len(named) < 10 {
		t.Fatalf("found %d names in diagnose.go: has its form changed?", len(named))
	}
	for _, n := range named {
		name := n[1] + n[2]
		if m, ok := mistakes.Named(name); !ok || m.Seen == "" {
			t.Errorf("the diagnosis names %q, which the catalogue lacks or gives nothing torture sees", name)
		}
	}
}

// TestMissingFieldIsNotZero: a 201 without amountKobo (or without
// transferId) is said to lack it, never read as 0 ("the reply names
// transfer 99 of 0 kobo").
func TestMissingFieldIsNotZero(t *testing.T) {
	t.Parallel()
	books := audit.Books{Transfers: []audit.Transfer{{ID: 99, From: 4, To: 5, Kobo: 150}}}
	in := audit.Intent{Label: "torture-1-000050", From: 4, To: 5, Kobo: 150, Want: 1}
	for body, want := range map[string]string{
		`{"transferId":99}`:                    "the reply (201) lacks the field amountKobo; the ledger holds transfer 99 of 150 kobo",
		`{"amountKobo":150}`:                   "the reply (201) lacks the field transferId; the ledger holds transfer 99 of 150 kobo",
		`{}`:                                   "lacks the field transferId and lacks the field amountKobo",
		`{"transferId":"99","amountKobo":150}`: `has transferId "99", not a whole number`,
		`[1]`:                                  "is not a JSON object",
		`{"transferId":98,"amountKobo":150}`:   "the reply names transfer 98 of 150 kobo",
		`{"transferId":99,"amountKobo":150.5}`: "has amountKobo 150.5, not a whole number",
	} {
		a := attempt{Status: 201, Body: body}
		f := books.Answered(in, []audit.Reply{a.reply()})
		if f.Holds || !strings.Contains(f.Detail, want) || strings.Contains(f.Detail, " of 0 kobo") {
			t.Errorf("%s: %s\nwant it to say %q", body, f.Detail, want)
		}
	}
	a := attempt{Status: 201, Body: `{"transferId":99,"amountKobo":150}`}
	if f := books.Answered(in, []audit.Reply{a.reply()}); !f.Holds {
		t.Errorf("a whole receipt: %s", f.Detail)
	}
}

// TestDiagnosisWitnessesDeath: a send that only went unanswered (its
// client gave up on a slow replica) did not die, and second-transaction is
// not named from it: under load a no-fencing server's slow request showed
// that history. With its replica killed while it was in flight, it died.
func TestDiagnosisWitnessesDeath(t *testing.T) {
	t.Parallel()
	history := func() []*intent {
		return []*intent{
			hist("torture-1-000016", []int64{21, 22}, noAnswer(at(0, 0, "send", 0, 100)), made(at(1, 0, "retry", 1200, 1210), 22)),
			sharedKeys(),
		}
	}
	violations := []string{"1 intents moved money twice"}
	if d := diagnose(history(), nil, time.Second, violations, nil); d.Mistake != "" {
		t.Errorf("no kill: diagnosed %q: %s, want none", d.Mistake, d.Why)
	}
	replica := 0
	killed := []fault{{Fault: "replica-kill", Replica: &replica, at: 50 * time.Millisecond}}
	if d := diagnose(history(), nil, time.Second, violations, killed); d.Mistake != "second-transaction" || !strings.Contains(d.Why, "transfer 21 was made") {
		t.Errorf("its replica killed in flight: diagnosed %q: %s, want second-transaction", d.Mistake, d.Why)
	}
	late := []fault{{Fault: "replica-kill", Replica: &replica, at: 500 * time.Millisecond}}
	if d := diagnose(history(), nil, time.Second, violations, late); d.Mistake != "" {
		t.Errorf("its replica killed after it ended: diagnosed %q: %s, want none", d.Mistake, d.Why)
	}
}
