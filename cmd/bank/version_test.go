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
