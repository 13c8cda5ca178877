package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// newTerminal opens a pseudo-terminal of cols columns: master, the side
// the test reads what is shown from and types into, and tty, the terminal
// that bank gets. Both are closed when the test ends (close tty sooner to
// have master's reads end once bank's copies are closed too).
func newTerminal(t *testing.T, cols int) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 50, Col: uint16(cols)}); err != nil {
		t.Fatal(err)
	}
	return master, tty
}

// onTerminal runs bank in-process with its standard output on a
// pseudo-terminal of cols columns, and returns what the terminal showed
// (its \r\n as \n) and the exit code.
func onTerminal(t *testing.T, cols int, env map[string]string, args ...string) (string, int) {
	t.Helper()
	master, tty := newTerminal(t, cols)
	var shown bytes.Buffer
	done := make(chan struct{})
	go func() {
		io.Copy(&shown, master) // until the terminal's last side closes (EIO)
		close(done)
	}()
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "DATABASE_URL" {
			return pgtest.AdminURL()
		}
		return ""
	}
	var stderr bytes.Buffer
	code := run(context.Background(), args, stdio{In: strings.NewReader(""), Out: tty, Err: &stderr}, getenv)
	tty.Close()
	<-done
	if stderr.Len() > 0 && code != 0 {
		t.Logf("stderr: %s", stderr.String())
	}
	return strings.ReplaceAll(shown.String(), "\r\n", "\n"), code
}

// widest is the columns of out's widest line.
func widest(out string) int {
	w := 0
	for _, l := range strings.Split(out, "\n") {
		w = max(w, utf8.RuneCountInString(l))
	}
	return w
}

// TestTerminalColour: on a terminal bank colours its transcript, but not
// where TERM=dumb says the terminal shows escape codes as they are (nor
// with NO_COLOR).
func TestTerminalColour(t *testing.T) {
	t.Parallel()
	if out, code := onTerminal(t, 100, map[string]string{"TERM": "xterm-256color"}, "scenario", "atomic"); code != 0 || !strings.Contains(out, "\x1b[") {
		t.Errorf("on a terminal: exit %d, no colour: %q", code, out)
	}
	for _, env := range []map[string]string{{"TERM": "dumb"}, {"TERM": "xterm", "NO_COLOR": "1"}} {
		if out, code := onTerminal(t, 100, env, "scenario", "atomic"); code != 0 || strings.Contains(out, "\x1b[") {
			t.Errorf("%v: exit %d, colour: %q", env, code, out)
		}
	}
}

// TestNarrowTerminal: a terminal narrower than 80 columns gets lines that
// fit it: a transcript down to 50 columns, a diagram down to 60 (its
// lanes need them; a narrower terminal wraps what is wider), a list down
// to 50 (and no wider than 80 on a wide one).
func TestNarrowTerminal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cols, want int
		args       []string
	}{
		{50, 50, []string{"scenario", "crash"}},
		{54, 54, []string{"mistake", "no-fencing"}},
		{30, 50, []string{"scenario", "crash"}},
		{50, 60, []string{"scenario", "crash", "--diagram"}},
		{50, 50, []string{"scenario", "list"}},
		{120, 80, []string{"scenario", "list"}},
	} {
		out, code := onTerminal(t, c.cols, map[string]string{"TERM": "dumb"}, c.args...)
		if code != 0 {
			t.Fatalf("%v on %d columns: exit %d: %s", c.args, c.cols, code, out)
		}
		if w := widest(out); w > c.want || w < c.want-12 {
			t.Errorf("%v on %d columns: lines up to %d columns, want up to %d:\n%s", c.args, c.cols, w, c.want, out)
		}
	}
}
