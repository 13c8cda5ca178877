package main

import "strings"

// didYouMean is " (did you mean NAME?)" for the name closest to a
// mistyped one, when one is close enough: one that starts with what was
// typed, or at most two edits away (three for a name of six letters or
// more); "" otherwise.
func didYouMean(typed string, names []string) string {
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
