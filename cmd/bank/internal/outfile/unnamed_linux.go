package outfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// createUnnamed makes a file with no name in dir (O_TMPFILE), or returns
// nil where the file system cannot (then a named one is made).
func createUnnamed(dir string) *os.File {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		return nil // no way to name it later without a privilege
	}
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir, "(unnamed)"))
}

// nameUnnamed links the unnamed file f into dir under a fresh name made
// from pattern (its "*" replaced by random characters), through
// /proc/self/fd as an account with no special right may.
func nameUnnamed(f *os.File, dir, pattern string) (string, error) {
	for range 10 {
		var r [8]byte
		rand.Read(r[:])
		base := pattern + ".tmp"
		if i := strings.LastIndex(pattern, "*"); i >= 0 {
			base = pattern[:i] + hex.EncodeToString(r[:]) + pattern[i+1:]
		}
		name := filepath.Join(dir, base)
		err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), unix.AT_FDCWD, name, unix.AT_SYMLINK_FOLLOW)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return "", &os.LinkError{Op: "link", Old: f.Name(), New: name, Err: err}
		}
		return name, nil
	}
	return "", errors.New("no free name for a temporary file in " + dir)
}
