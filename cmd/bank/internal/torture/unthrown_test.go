package torture

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// busyReplica answers every request 503, as a replica too slow to serve
// any does to its clients.
type busyReplica struct{ url string }

func (b busyReplica) URL() string             { return b.url }
func (busyReplica) Kill() error               { return nil }
func (busyReplica) Restart() error            { return nil }
func (busyReplica) Pause() error              { return nil }
func (busyReplica) Resume() error             { return nil }
func (busyReplica) Name() string              { return "busy" }
func (busyReplica) Metrics() map[string]int64 { return nil }

// TestUnansweredIntentLeavesItsFaultsUnthrown: an intent that never got a
// definitive answer while the load lasted is left to settle; the faults
// its plan put on that answer (a lost reply, its retry at the other
// replica, a changed body) are not counted as thrown but as unthrown, so
// that thrown and unthrown together are still the seed's plan, and the
// report says so.
func TestUnansweredIntentLeavesItsFaultsUnthrown(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	replicas := []Replica{busyReplica{srv.URL}, busyReplica{srv.URL}}
	r, _ := newRun(Config{Seed: 1, LockTTL: 2 * time.Second, Replicas: replicas, Faults: AllFaults}, func(error) {})
	in := &intent{n: 0, plan: plan{First: 0, Drops: 1, Copy: "changed-body"}, key: "k-0", body: `{"from":1,"to":2,"amountKobo":100}`, amount: 100}
	r.drive(context.Background(), in)
	var rep Report
	r.tally(&rep)
	for kind, want := range map[string]int64{"lost-response": 1, "other-replica": 1, "changed-body": 1} {
		if rep.Faults[kind] != 0 || rep.Unthrown[kind] != want {
			t.Errorf("%s: thrown %d, unthrown %d; want 0 and %d", kind, rep.Faults[kind], rep.Unthrown[kind], want)
		}
	}
	if len(in.attempts) != 12 {
		t.Errorf("%d attempts, want 12 before it is left to settle", len(in.attempts))
	}
	var out strings.Builder
	rep.Print(&out)
	if !strings.Contains(out.String(), "planned by the seed but not thrown") || !strings.Contains(out.String(), "changed-body 1, lost-response 1, other-replica 1") {
		t.Errorf("the report does not say what was left unthrown:\n%s", out.String())
	}
}
