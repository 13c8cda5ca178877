//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
)

// TestHTMLNeverDestructive: --html writes a new file or over a regular
// one, and nothing else: a FIFO, a link or a device is refused (exit 2,
// one line) and left as it was; "-" is standard output, the page alone.
func TestHTMLNeverDestructive(t *testing.T) {
	t.Parallel()
	tr := fileTraps(t, "link.html", "/dev/null")
	for path, what := range tr.refused {
		r := cli(t, nil, "scenario", "naive", "--html", path)
		if r.code != exitcode.Usage || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, what) {
			t.Errorf("--html %s: exit %d, %q; want exit 2 and one line naming %s", path, r.code, r.stderr, what)
		}
	}
	tr.unchanged(t, ".bank-page-*")
	r := cli(t, nil, "scenario", "naive", "--html", "-")
	if r.code != exitcode.OK || !strings.HasPrefix(r.stdout, "<!DOCTYPE html>") || !strings.HasSuffix(r.stdout, "</html>\n") {
		t.Errorf("--html -: exit %d, want the page alone on stdout: %.200s", r.code, r.stdout)
	}
}
