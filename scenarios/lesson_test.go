package scenarios_test

import (
	"os"
	"strings"
	"testing"
)

// lessonLines is what the lesson's scripts print, per scenario, in order.
// One line differs on purpose: Node names the HTTP client's network error
// TypeError, and Go's client says what happened; the transcript says so on
// the next line.
var lessonLines = map[string][]string{
	"naive": {
		"before: Ada ₦50,000, Bola ₦5,000, Chidi ₦20,000 | total ₦75,000 | transfers 0",
		"credit changed 0 rows, and did not fail",
		"failed: insert or update on table \"transfers\" violates foreign key constraint \"transfers_to_account_fkey\"",
		"after:  Ada ₦40,000, Bola ₦5,000, Chidi ₦20,000 | total ₦65,000 | transfers 0",
	},
	"atomic": {
		"failed: insert or update on table \"transfers\" violates foreign key constraint \"transfers_to_account_fkey\"",
		"after: Ada ₦50,000, Bola ₦5,000, Chidi ₦20,000 | total ₦75,000 | transfers 0",
	},
	"rules": {
		"ok                 201 transfer 1",
		"not your account   404 account_not_found",
		"frozen sender      422 account_not_active",
		"frozen recipient   422 recipient_unavailable",
		"no such recipient  422 recipient_unavailable",
		"too much           422 insufficient_funds",
		"half a kobo        400 invalid_amount",
		"Ada ₦40,000, Bola ₦15,000, Chidi ₦20,000 | total ₦75,000 | transfers 1",
	},
	"lost-response": {
		"attempt 1: timed out waiting for the response",
		"attempt 2: 201",
		"Ada ₦30,000, Bola ₦25,000, Chidi ₦20,000 | total ₦75,000 | transfers 2",
	},
	"retry-safe": {
		"attempt 1: timed out waiting for the response",
		"attempt 2: 201 (replayed) {",
		"  to: 2,",
		"  from: 1,",
		"  amountKobo: 1000000,",
		"  transferId: 1,",
		"  balanceKobo: 4000000",
		"}",
		"Ada ₦40,000, Bola ₦15,000, Chidi ₦20,000 | total ₦75,000 | transfers 1",
	},
	"key-misuse": {
		"first request              201  ok",
		"same, keys reordered       201 replayed ok",
		"same key, other amount     422  idempotency_key_reused",
		"other user, same key       201  ok",
		"no key                     400  idempotency_key_required",
		"too much                   422  insufficient_funds",
		"too much, retried          422 replayed insufficient_funds",
		"Ada ₦41,000, Bola ₦14,000, Chidi ₦20,000 | total ₦75,000 | transfers 2",
	},
	"concurrent": {
		"first:  201  ok",
		"second: 201 replayed ok",
		"later:  201 replayed",
		"Ada ₦40,000, Bola ₦15,000, Chidi ₦20,000 | total ₦75,000 | transfers 1",
	},
	"crash": {
		"server A claimed the key: proceed and then went silent",
		"retry after 10 s: 409 request_in_progress",
		"retry after 31 s: 201 transfer 1",
		"server A wakes up: lost the idempotency lock; rolling back",
		"Ada ₦40,000, Bola ₦15,000, Chidi ₦20,000 | total ₦75,000 | transfers 1",
	},
	"http": {
		"attempt 1: network error (connection closed before the response), will retry",
		"attempt 2: 201 replayed: true",
		"app shows: {",
		"  to: 2,",
		"  from: 1,",
		"  amountKobo: 1000000,",
		"  transferId: 1,",
		"  balanceKobo: 4000000",
		"}",
		"Ada ₦40,000, Bola ₦15,000, Chidi ₦20,000 | total ₦75,000 | transfers 1",
	},
	"ship": {
		"shipped",
		"already shipped (ok)",
		"error: order is cancelled",
		"error: order is missing",
	},
	"cleanup": {
		"deleted: [ 'old-completed', 'old-stuck' ]",
		"kept: [ 'new-completed' ]",
	},
	"should-retry": {
		"network  true",
		"201      false",
		"400      false",
		"409      true",
		"422      false",
		"429      true",
		"500      true",
		"503      true",
	},
}

// TestLessonLinesVerbatim: every line the lesson prints appears, verbatim
// and in the lesson's order, in the matching golden transcript.
func TestLessonLinesVerbatim(t *testing.T) {
	for sc, want := range lessonLines {
		raw, err := os.ReadFile(goldenDir + "/" + sc + ".golden")
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Split(string(raw), "\n")
		i := 0
		for _, line := range want {
			for i < len(got) && got[i] != line {
				i++
			}
			if i == len(got) {
				t.Errorf("%s: the lesson's line %q is not in the transcript (in order)", sc, line)
				break
			}
		}
	}
}
