package torture

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Print prints the report as bank torture does: the faults thrown (the
// seed's), the checks passed, what the timing decided, the latency, the
// violations, the mistake they fit and the verdict.
func (rep Report) Print(w io.Writer) {
	fmt.Fprintf(w, "seed %d, %d intents\n\nfaults injected:\n", rep.Seed, rep.Intents)
	for _, k := range sortedKeys(rep.Faults) {
		fmt.Fprintf(w, "  %-42s %d\n", k, rep.Faults[k])
	}
	if len(rep.LeftOut) > 0 {
		fmt.Fprintln(w, "\nfault kinds left out, which this platform cannot inject:")
		for _, k := range slices.Sorted(maps.Keys(rep.LeftOut)) {
			fmt.Fprintf(w, "  %s: %s\n", k, rep.LeftOut[k])
		}
		if _, ok := rep.LeftOut["replica-pause"]; ok {
			fmt.Fprintln(w, "  (so neither the takeover nor the fencing rejection a pause brings is required)")
		}
	}
	fmt.Fprintln(w, "\nchecks passed:")
	checks := map[string]int64{}
	for k, v := range rep.Checks {
		checks[k] = int64(v)
	}
	for _, k := range sortedKeys(checks) {
		fmt.Fprintf(w, "  %-42s %d\n", k, checks[k])
	}
	if len(rep.Timed) > 0 {
		fmt.Fprintln(w, "\ntimed (the machine's timing decides these, not the seed):")
		for _, k := range sortedKeys(rep.Timed) {
			fmt.Fprintf(w, "  %-42s %d\n", k, rep.Timed[k])
		}
	}
	fmt.Fprintf(w, "\nlatency p50 %.1f ms, p99 %.1f ms; every intent settled %.1f s after the last fault\n", rep.P50, rep.P99, float64(rep.ResolveMs)/1000)
	if len(rep.Violations) > 0 {
		fmt.Fprintf(w, "\nviolations (%d):\n", len(rep.Violations))
		for i, v := range rep.Violations {
			if i == 20 {
				fmt.Fprintf(w, "  ... and %d more\n", len(rep.Violations)-20)
				break
			}
			fmt.Fprintln(w, "  "+v)
		}
		fmt.Fprintf(w, "offending keys: %d\n", len(rep.Offending))
	}
	if d := rep.Diagnosis; d != nil {
		if d.Mistake != "" {
			fmt.Fprintf(w, "\nlooks like the mistake %s (%s): %s\n", d.Mistake, d.See, d.Why)
		} else {
			fmt.Fprintf(w, "\nno mistake named: %s\n", d.Why)
		}
	}
	if len(rep.Unthrown) > 0 {
		var kinds []string
		for _, k := range sortedKeys(rep.Unthrown) {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, rep.Unthrown[k]))
		}
		fmt.Fprintf(w, "\nplanned by the seed but not thrown, their intents unanswered until the load ended (a busy machine): %s\n", strings.Join(kinds, ", "))
	}
	if len(rep.Missing) > 0 {
		fmt.Fprintf(w, "\nfault kinds asked for that never happened: %s\n", strings.Join(rep.Missing, ", "))
	}
	fmt.Fprintf(w, "\nverdict: %s\n", tableWord(rep.Verdict))
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// tableWord is a verdict as the table says it, in the words of Jepsen's
// checkers: a history is valid or invalid (--json says pass and fail, as
// every judge of the lab does).
func tableWord(verdict string) string {
	switch verdict {
	case "pass":
		return "valid"
	case "fail":
		return "invalid"
	}
	return verdict
}
