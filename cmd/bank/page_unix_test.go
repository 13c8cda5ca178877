//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
)

// TestHTMLNeverDestructive: --html writes a new file or over a regular
// one, and nothing else: a FIFO, a link or a device is refused (exit 2,
// one line) and left as it was; "-" is standard output, the page alone.
func TestHTMLNeverDestructive(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "precious.txt")
	if err := os.WriteFile(target, []byte("keep me\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.html")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for path, what := range map[string]string{fifo: "a FIFO", link: "a symbolic link", "/dev/null": "a device", dir: "a directory"} {
		r := cli(t, nil, "scenario", "naive", "--html", path)
		if r.code != exitcode.Usage || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, what) {
			t.Errorf("--html %s: exit %d, %q; want exit 2 and one line naming %s", path, r.code, r.stderr, what)
		}
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", st.Mode(), err)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "keep me\n" {
		t.Errorf("the link's target changed: %q %v", b, err)
	}
	if st, err := os.Lstat("/dev/null"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Errorf("/dev/null is no longer a device: %v %v", st.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".bank-page-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	r := cli(t, nil, "scenario", "naive", "--html", "-")
	if r.code != exitcode.OK || !strings.HasPrefix(r.stdout, "<!DOCTYPE html>") || !strings.HasSuffix(r.stdout, "</html>\n") {
		t.Errorf("--html -: exit %d, want the page alone on stdout: %.200s", r.code, r.stdout)
	}
}
