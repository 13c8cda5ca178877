package main

import (
	"strings"
	"testing"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
)

func TestVersionCommand(t *testing.T) {
	t.Parallel()
	r := cli(t, nil, "version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "bank "+version+"\ncommit "+commit+"\nbuilt with go") {
		t.Fatalf("version: %+v", r)
	}
	r = cli(t, nil, "version", "extra")
	if r.code != exitcode.Usage || !strings.Contains(r.stderr, `takes no arguments, got "extra"`) {
		t.Fatalf("version extra: %+v", r)
	}
	oneLine(t, r)
}

// TestVersionFlagMatchesCommand: bank --version and bank -v --version
// print what bank version prints, in the same form.
func TestVersionFlagMatchesCommand(t *testing.T) {
	t.Parallel()
	want := cli(t, nil, "version")
	for _, args := range [][]string{{"--version"}, {"-v", "--version"}} {
		if r := cli(t, nil, args...); r.code != 0 || r.stdout != want.stdout || r.stderr != "" {
			t.Errorf("%v: exit %d, %q; bank version prints %q", args, r.code, r.stdout, want.stdout)
		}
	}
}
