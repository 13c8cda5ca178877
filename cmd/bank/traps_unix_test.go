//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// traps are what a flag naming a file to write (--html, --history) must
// refuse, made in a directory of their own: a FIFO, a link (named as the
// flag's file would be) to a file that must be kept, a device and the
// directory itself. refused maps each path to the words that name it.
type traps struct {
	dir, fifo, target, link, device string
	refused                         map[string]string
}

func fileTraps(t *testing.T, linkName, device string) traps {
	t.Helper()
	dir := t.TempDir()
	tr := traps{dir: dir, fifo: filepath.Join(dir, "fifo"), target: filepath.Join(dir, "precious.txt"), link: filepath.Join(dir, linkName), device: device}
	if err := syscall.Mkfifo(tr.fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tr.target, []byte("keep me\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(tr.target, tr.link); err != nil {
		t.Fatal(err)
	}
	tr.refused = map[string]string{tr.fifo: "a FIFO", tr.link: "a symbolic link", device: "a device", dir: "a directory"}
	return tr
}

// unchanged fails the test unless every trap is as it was made, with no
// temporary file (named as pattern) beside them or in the device's
// directory.
func (tr traps) unchanged(t *testing.T, pattern string) {
	t.Helper()
	if st, err := os.Lstat(tr.fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", st.Mode(), err)
	}
	if b, err := os.ReadFile(tr.target); err != nil || string(b) != "keep me\n" {
		t.Errorf("the link's target changed: %q %v", b, err)
	}
	if st, err := os.Lstat(tr.link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", st.Mode(), err)
	}
	if st, err := os.Lstat(tr.device); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Errorf("%s is no longer a device: %v %v", tr.device, st.Mode(), err)
	}
	for _, dir := range []string{tr.dir, filepath.Dir(tr.device)} {
		if left, _ := filepath.Glob(filepath.Join(dir, pattern)); len(left) != 0 {
			t.Errorf("temporary files left: %v", left)
		}
	}
}
