package grade

import (
	"encoding/json"
	"time"
)

func restart(t *trial) {
	r := t.adaPaysBola("grade-restart-00001")
	first := t.sendFirst(r)
	claimBy := time.Now()
	if first.Status != 201 {
		t.fail("the first request got %s, not 201", first.short())
		return
	}
	if before := t.send(r); before.Status == 201 && t.count(1, 2, tenThousand) > 1 {
		t.failAs(mNoIdempotency, "even before the restart, a copy ran the transfer again: the server does not keep the key at all")
		return
	}
	t.stop(0)
	t.must(t.restart(0))
	t.note("the server is stopped (SIGTERM) and started again")
	if t.retryGetsStored(r, &first, claimBy, "the restart", mMemoryKeys) {
		t.passed("after the restart the copy got the stored 201; money moved once")
	}
}

func lookup(t *trial) {
	const key = "grade-lookup-000001"
	t.send(t.adaPaysBola(key))
	got := t.get("ada", "/transfers?key="+key)
	var rec struct {
		Status string `json:"status"`
	}
	if got.Status != 200 || json.Unmarshal([]byte(got.Body), &rec) != nil || rec.Status != "completed" {
		t.failAs(mNoLookup, `asking about a completed key got %s, not 200 with "status":"completed"`, got.short())
		return
	}
	if unknown := t.get("ada", "/transfers?key=grade-never-sent-0001"); unknown.Status != 404 {
		t.fail("asking about a key never sent got %s, not 404", unknown.short())
		return
	}
	// Rule 2 holds for every read by key: Bola never sent Ada's key.
	if other := t.get("bola", "/transfers?key="+key); other.Status != 404 {
		t.failAs(mUnscoped, "Bola, asking about the key Ada used, got %s %s, not 404: a key must be looked up within its own user's keys, or one user learns of another's transfers", other.short(), other.Body)
		return
	}
	t.passed(`200 "completed" for a key of the user's, 404 for one never sent and for another user's`)
}
