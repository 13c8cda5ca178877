package torture

import (
	"slices"
	"strings"
	"testing"
)

// TestFaultsPerPlatform: Windows, which has no SIGSTOP, leaves the pause
// out and says why; Linux and macOS keep every fault kind asked for, and
// their report says nothing of the kind (it is as it always was).
func TestFaultsPerPlatform(t *testing.T) {
	for _, goos := range []string{"linux", "darwin"} {
		kept, leftOut := forPlatform(AllFaults, goos)
		if !slices.Equal(kept, AllFaults) || leftOut != nil {
			t.Errorf("%s: kept %v, left out %v", goos, kept, leftOut)
		}
	}
	kept, leftOut := forPlatform(AllFaults, "windows")
	if slices.Contains(kept, "replica-pause") || len(kept) != len(AllFaults)-1 {
		t.Errorf("windows keeps %v", kept)
	}
	if why := leftOut["replica-pause"]; len(leftOut) != 1 || !strings.Contains(why, "SIGSTOP") {
		t.Errorf("windows leaves out %v", leftOut)
	}
	// Asked only for what Windows can do, nothing is left out.
	if _, leftOut := forPlatform([]string{"duplicate", "replica-kill"}, "windows"); leftOut != nil {
		t.Errorf("windows left out %v of faults it can inject", leftOut)
	}
}
