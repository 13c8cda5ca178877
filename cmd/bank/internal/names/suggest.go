package names

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// DidYouMean is " (did you mean NAME?)" for the name closest to a
// mistyped one, when one is close enough: one that starts with what was
// typed, or at most two edits away (three for a name of six letters or
// more); "" otherwise.
func DidYouMean(typed string, names []string) string {
	limit := 2
	if len(typed) >= 6 {
		limit = 3
	}
	best, bestDist := "", limit+1
	for _, n := range names {
		if typed != "" && strings.HasPrefix(n, typed) {
			return " (did you mean " + n + "?)"
		}
		if d := editDistance(typed, n); d < bestDist {
			best, bestDist = n, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}

// flagSynonyms are the names one idea goes by across commands: where a
// server listens is --addr (serve, lab), where a client sends --server
// (send, status, grade's servers are started by it); a learner who types
// one where the other is meant is pointed to it.
var flagSynonyms = map[string][]string{
	"addr": {"server"}, "server": {"addr"}, "listen": {"addr"}, "url": {"server", "database-url"},
	"port": {"server", "addr", "pg-port"}, "db": {"database-url"}, "database": {"database-url"},
}

// FlagSuggestion is " (did you mean --NAME?)" for an unknown flag, when
// the command has one by another name for the same idea, or one spelt
// nearly so.
func FlagSuggestion(cmd *cobra.Command, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return ""
	}
	name, _, _ = strings.Cut(name, "=")
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	cmd.InheritedFlags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	for _, s := range flagSynonyms[name] {
		if slices.Contains(names, s) {
			return " (did you mean --" + s + "?)"
		}
	}
	return strings.Replace(DidYouMean(name, names), "(did you mean ", "(did you mean --", 1)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
