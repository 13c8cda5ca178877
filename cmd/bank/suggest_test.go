package main

import (
	"strings"
	"testing"
)

func TestDidYouMean(t *testing.T) {
	t.Parallel()
	names := []string{"naive", "crash", "concurrent", "no-fencing", "no-lock-expiry", "list", "all"}
	for typed, want := range map[string]string{
		"crsh":     " (did you mean crash?)",
		"conc":     " (did you mean concurrent?)",
		"no-fence": " (did you mean no-fencing?)",
		"naiev":    " (did you mean naive?)",
		"x":        "",
		"database": "",
	} {
		if got := didYouMean(typed, names); got != want {
			t.Errorf("%q: got %q, want %q", typed, got, want)
		}
	}
}

// TestFlagSuggestions: an unknown flag is answered with the command's own
// name for the same idea (a server listens at --addr, a client sends to
// --server), or the flag it nearly spells.
func TestFlagSuggestions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"send", "--addr", "http://127.0.0.1:1"}, "(did you mean --server?)"},
		{[]string{"serve", "--server", "127.0.0.1:0"}, "(did you mean --addr?)"},
		{[]string{"scenario", "crash", "--explian"}, "(did you mean --explain?)"},
		{[]string{"status", "--port", "8080"}, "(did you mean --server?)"},
	} {
		r := cli(t, nil, c.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
}
