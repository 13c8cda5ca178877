package torture

import (
	"maps"
	"testing"
)

// TestPlanIsTheSeeds: an intent's faults come from the seed and its
// number alone, so two plans of one seed are the same, fault for fault,
// and another seed plans others. (Before, a client's own random stream
// drew them, so which client took which intent changed them: bank
// torture --seed 1 --intents 300 lost 45 responses in one run, 47 in the
// next.)
func TestPlanIsTheSeeds(t *testing.T) {
	t.Parallel()
	for n := range 2000 {
		if a, b := planFor(7, n, 2, 0.1), planFor(7, n, 2, 0.1); a != b {
			t.Fatalf("intent %d: %+v, then %+v", n, a, b)
		}
	}
	a, b := Planned(7, 2000, 2, 0.1), Planned(7, 2000, 2, 0.1)
	if !maps.Equal(a, b) {
		t.Fatalf("seed 7 planned %v, then %v", a, b)
	}
	for _, f := range []string{"lost-response", "client-crash", "other-replica", "duplicate", "concurrent-duplicate", "changed-body"} {
		if a[f] == 0 {
			t.Errorf("seed 7 plans no %s: %v", f, a)
		}
	}
	if maps.Equal(a, Planned(8, 2000, 2, 0.1)) {
		t.Errorf("seeds 7 and 8 plan the same: %v", a)
	}
	t.Logf("seed 7: %v", a)
}
