// Package names is how bank accepts the names a learner types: the
// lessons' scenarios, mistakes and exercises as one argument (with list
// and all), their completion and their table in --help, and the
// suggestion for a name or a flag that was nearly right. A name that is
// not right is a usage error (exit 2, package exitcode).
package names

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
)

// Entry is a name the command accepts, with its one-line summary.
type Entry struct{ Name, Summary string }

// EntriesOf lists names and summaries of scenarios, mistakes or exercises.
func EntriesOf[T any](items []T, e func(T) Entry) []Entry {
	out := make([]Entry, len(items))
	for i, it := range items {
		out[i] = e(it)
	}
	return out
}

// Complete offers list, all and every name to shell completion.
func Complete(kind string, entries []Entry) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		names := []string{"list\tthe " + kind + "s, in the lesson's order", "all\trun every " + kind}
		for _, e := range entries {
			names = append(names, e.Name+"\t"+e.Summary)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// One accepts exactly one argument: a name, list or all.
func One(kind string, entries []Entry) cobra.PositionalArgs {
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name
	}
	return func(_ *cobra.Command, args []string) error {
		if len(args) > 1 {
			return exitcode.Usagef("one %s at a time: got %q; run them one by one, or all of them with all", kind, strings.Join(args, " "))
		}
		if len(args) != 1 {
			return exitcode.Usagef("name one %s, or list or all: %s", kind, strings.Join(names, ", "))
		}
		if !slices.Contains(names, args[0]) && args[0] != "list" && args[0] != "all" {
			return exitcode.Usagef("unknown %s %q%s; choose one of %s, or list, or all", kind, args[0], DidYouMean(args[0], append(names, "list", "all")), strings.Join(names, ", "))
		}
		return nil
	}
}

// Table lists names with their one-line summaries, for --help.
func Table(entries []Entry) string {
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "  %-20s %s\n", e.Name, e.Summary)
	}
	return strings.TrimRight(b.String(), "\n")
}
