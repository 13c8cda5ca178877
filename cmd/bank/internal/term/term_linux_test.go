package term

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// pty opens a pseudo-terminal and returns its terminal side, set to cols
// columns.
func pty(t *testing.T, cols int) *os.File {
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
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: uint16(cols)}); err != nil {
		t.Fatal(err)
	}
	return tty
}

// TestWidth: a terminal's width is its window's columns, whatever they
// are (narrow ones too); a pipe, a file or a buffer has none.
func TestWidth(t *testing.T) {
	for _, cols := range []int{37, 59, 80, 213} {
		tty := pty(t, cols)
		if !IsTerminal(tty) {
			t.Fatalf("a pseudo-terminal is not a terminal")
		}
		if got := Width(tty); got != cols {
			t.Errorf("a terminal of %d columns: Width %d", cols, got)
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, v := range map[string]any{"a pipe": w, "a file": f, "a buffer": &bytes.Buffer{}, "nil": nil} {
		if got := Width(v); got != 0 || IsTerminal(v) {
			t.Errorf("%s: Width %d, IsTerminal %v", name, got, IsTerminal(v))
		}
	}
}
