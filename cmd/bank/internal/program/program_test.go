package program

import (
	"context"
	"strings"
	"testing"
)

// TestOutputIsBounded: a program that prints without end is stopped once
// past the limit, and the lab holds no more of its output than its two
// fixed buffers, whichever stream it floods; a program that prints a lot,
// but less than the limit, has its head kept and its tail shown.
func TestOutputIsBounded(t *testing.T) {
	t.Parallel()
	for _, flood := range []string{"yes", "yes >&2", "yes | tee /dev/stderr"} {
		run, err := Run(context.Background(), []string{"sh", "-c", flood}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !run.TooMuch || run.Total <= OutputLimit {
			t.Errorf("%s: not stopped past the limit: %+v", flood, run.Total)
		}
		if run.Kept > KeepStdout+KeepStderr || len(run.Stdout) > KeepStdout || len(run.Stderr) > KeepStderr {
			t.Errorf("%s: the lab held %d bytes of buffer (stdout %d, stderr %d), more than %d", flood, run.Kept, len(run.Stdout), len(run.Stderr), KeepStdout+KeepStderr)
		}
	}
	// 200 KiB out and 100 KiB of error, less than the limit together.
	run, err := Run(context.Background(), []string{"sh", "-c", "head -c 204800 /dev/zero | tr '\\0' o; head -c 102400 /dev/zero | tr '\\0' e >&2; printf '\\nlast\\n' >&2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if run.TooMuch || run.Exit != 0 || len(run.Stdout) != KeepStdout || !run.StdoutCut || len(run.Stderr) > KeepStderr || !run.StderrCut || !strings.HasSuffix(run.Stderr, "last\n") {
		t.Errorf("stdout %d (cut %t), stderr %d (cut %t), exit %d, stopped %t", len(run.Stdout), run.StdoutCut, len(run.Stderr), run.StderrCut, run.Exit, run.TooMuch)
	}
	if shown := run.StderrShown(); strings.Contains(shown, "eeee") || shown != "last" {
		t.Errorf("a cut first line is shown: %q", shown)
	}
}
