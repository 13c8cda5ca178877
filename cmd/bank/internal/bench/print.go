package bench

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Print prints the report as bank bench does: a table of the modes, a
// bar each, the ratios against their targets, and the invariants.
func (rep Report) Print(w io.Writer) {
	fmt.Fprintf(w, "%d clients, %d accounts, %.0f s per mode in %d rounds of %.1f s\n\n",
		rep.Clients, rep.Accounts, rep.Seconds, rep.Rounds, rep.Seconds/float64(rep.Rounds))
	fmt.Fprintf(w, "%-42s %10s %8s %8s %11s\n", "mode", "per second", "p50 ms", "p99 ms", "server RSS")
	top := 0.0
	for _, r := range rep.Results {
		top = max(top, r.Throughput)
	}
	for _, r := range rep.Results {
		if r.Note != "" {
			fmt.Fprintf(w, "%-42s %s\n", r.Mode, r.Note)
			continue
		}
		rss := "-"
		if r.PeakRSSMiB > 0 {
			rss = fmt.Sprintf("%.1f MiB", r.PeakRSSMiB)
		}
		errs := ""
		if r.Errors > 0 {
			var kinds []string
			for why, n := range r.Failures {
				kinds = append(kinds, fmt.Sprintf("%s ×%d", why, n))
			}
			sort.Strings(kinds)
			errs = fmt.Sprintf("  (%d errors: %s)", r.Errors, strings.Join(kinds, ", "))
		}
		fmt.Fprintf(w, "%-42s %10.0f %8.2f %8.2f %11s%s\n", r.Mode, r.Throughput, r.P50, r.P99, rss, errs)
	}
	fmt.Fprintln(w)
	for _, r := range rep.Results {
		if top > 0 && r.Note == "" {
			fmt.Fprintf(w, "%-42s %s\n", r.Mode, strings.Repeat("#", int(40*r.Throughput/top+0.5)))
		}
	}
	fmt.Fprintln(w, "\nratios:")
	for _, r := range rep.Ratios {
		fmt.Fprintf(w, "  %-38s %s\n", r.Name, ratioText(r))
	}
	fmt.Fprintln(w, "\ninvariants:")
	for _, c := range rep.Checks {
		fmt.Fprintln(w, "  "+c)
	}
}

// ratioText is a ratio's value and how it stands against its target.
func ratioText(r Ratio) string {
	if !r.Available {
		return "n/a"
	}
	v := fmt.Sprintf("%.2f", r.Value)
	if r.Target == 0 {
		return v
	}
	verdict, cmp := "meets", ">="
	if r.Ceiling {
		cmp = "<="
	}
	if !r.Met {
		verdict = "misses"
	}
	return fmt.Sprintf("%s (target %s %g: %s)", v, cmp, r.Target, verdict)
}
