package main

import (
	"strings"
	"testing"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
)

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
		if r.code != exitcode.Usage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
}
