package names

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
)

// TestOneRefusesAsUsage: a missing, extra or unknown name is a usage
// error (exit 2), with a suggestion for a near miss; list, all and every
// name are taken.
func TestOneRefusesAsUsage(t *testing.T) {
	t.Parallel()
	one := One("scenario", []Entry{{Name: "naive", Summary: "no key"}, {Name: "crash", Summary: "a crash"}})
	for _, args := range [][]string{{"naive"}, {"crash"}, {"list"}, {"all"}} {
		if err := one(nil, args); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "name one scenario, or list or all: naive, crash"},
		{[]string{"naive", "crash"}, `one scenario at a time: got "naive crash"`},
		{[]string{"crsh"}, `unknown scenario "crsh" (did you mean crash?); choose one of naive, crash, or list, or all`},
	} {
		err := one(nil, c.args)
		if exitcode.Of(err) != exitcode.Usage || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v (exit %d), want exit 2 and %q", c.args, err, exitcode.Of(err), c.want)
		}
	}
}

// TestFlagSuggestion: the command's own name for the same idea first,
// then a flag spelt nearly so; nothing for an error that is not an
// unknown long flag.
func TestFlagSuggestion(t *testing.T) {
	t.Parallel()
	cmd := &cobra.Command{Use: "send"}
	cmd.Flags().String("server", "", "")
	cmd.Flags().Bool("explain", false, "")
	for msg, want := range map[string]string{
		"unknown flag: --addr":         " (did you mean --server?)",
		"unknown flag: --explian=true": " (did you mean --explain?)",
		"unknown flag: --zzzzzzzzzz":   "",
		"unknown shorthand flag: 'x'":  "",
	} {
		if got := FlagSuggestion(cmd, errors.New(msg)); got != want {
			t.Errorf("%q: got %q, want %q", msg, got, want)
		}
	}
}
