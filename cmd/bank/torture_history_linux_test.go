//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// TestTortureHistoryWriteFails: a write the machine refuses (here a file
// grown past the process's size limit, EFBIG, as a full disk would give
// ENOSPC) ends the run with exit 3 and one line that names the file and
// the reason, and leaves neither the file nor half of it.
func TestTortureHistoryWriteFails(t *testing.T) {
	t.Parallel()
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatalf("this test needs prlimit (util-linux): %v", err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "history.jsonl")
	// PostgreSQL is the test binary's own (a private one would inherit
	// the limit): only the history is written under it.
	cmd := exec.Command(prlimit, "--fsize=65536", "--", bankBinary(t), "torture", "--seed", "1", "--intents", "300", "--history", path)
	cmd.Env = append(os.Environ(), "BANK_CACHE_DIR="+pgtest.CacheDir(t), "DATABASE_URL="+pgtest.AdminURL())
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var last string
	if lines := strings.Split(strings.TrimSpace(stderr.String()), "\n"); len(lines) > 0 {
		last = lines[len(lines)-1]
	}
	if code := exitOf(err); code != exitcode.Env || !strings.HasPrefix(last, "bank: --history "+path+": file too large;") || stdout.String() != "" {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 3, no report, and a last line naming the file and the error", code, stdout.String(), stderr.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
}
