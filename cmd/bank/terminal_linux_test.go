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

	"golang.org/x/sys/unix"

	"github.com/zudojs/bank/bank/pgserver/pgtest"
)

// onTerminal runs bank in-process with its standard output on a
// pseudo-terminal of cols columns, and returns what the terminal showed
// (its \r\n as \n) and the exit code.
func onTerminal(t *testing.T, cols int, env map[string]string, args ...string) (string, int) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v", err)
	}
	defer master.Close()
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 50, Col: uint16(cols)}); err != nil {
		t.Fatal(err)
	}
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
