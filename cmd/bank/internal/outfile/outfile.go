// Package outfile writes a file the lab makes for the learner (the page
// of --html) safely, even as root: only a new file or a regular one is
// written, never through a link, never over a device, a FIFO or a
// directory; it is made whole beside its place and renamed over it, so
// an interrupted run leaves the old file, never half of a new one.
//
// Where the system can (Linux), the file being made has no name until
// Commit, so a run killed with SIGKILL leaves nothing beside the place;
// elsewhere it has a hidden name, removed on every error and interrupt.
package outfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// File is a file being made; nothing is in place until Commit.
type File struct {
	path    string
	pattern string
	tmp     *os.File
	unnamed bool // made without a name (O_TMPFILE); named at Commit
}

// NotAFile is a path that is there and is not a regular file.
type NotAFile struct{ Path, What string }

func (e *NotAFile) Error() string { return e.Path + " is " + e.What }

// NoRoom is a directory the file cannot be made in.
type NoRoom struct {
	Dir string
	Err error
}

func (e *NoRoom) Error() string { return fmt.Sprintf("cannot write in %s: %v", e.Dir, e.Err) }

// Create checks path, and makes the temporary file beside it that will
// become it (named with pattern, as os.CreateTemp takes it).
func Create(path, pattern string) (*File, error) {
	if err := regularOrNew(path); err != nil {
		return nil, err
	}
	if tmp := createUnnamed(filepath.Dir(path)); tmp != nil {
		return &File{path: path, pattern: pattern, tmp: tmp, unnamed: true}, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), pattern)
	if err != nil {
		if pe, ok := err.(*os.PathError); ok {
			err = pe.Err
		}
		return nil, &NoRoom{filepath.Dir(path), err}
	}
	return &File{path: path, pattern: pattern, tmp: tmp}, nil
}

// Write writes to the file being made.
func (f *File) Write(b []byte) (int, error) { return f.tmp.Write(b) }

// Commit puts the file in place: on disk, readable by all, renamed over
// path (checked once more, as it may have changed meanwhile).
func (f *File) Commit() error {
	if err := f.tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := f.tmp.Sync(); err != nil {
		return err
	}
	name := f.tmp.Name()
	if f.unnamed {
		var err error
		if name, err = nameUnnamed(f.tmp, filepath.Dir(f.path), f.pattern); err != nil {
			return err
		}
		f.unnamed = false // it has a name now: Discard removes it
	}
	if err := f.tmp.Close(); err != nil {
		return err
	}
	if err := regularOrNew(f.path); err != nil {
		return err
	}
	if err := os.Rename(name, f.path); err != nil {
		return err
	}
	f.tmp = nil
	return nil
}

// Discard removes the file being made, if it was not committed.
func (f *File) Discard() {
	if f != nil && f.tmp != nil {
		f.tmp.Close()
		if !f.unnamed {
			os.Remove(f.tmp.Name())
		}
		f.tmp = nil
	}
}

// regularOrNew refuses a path that is there and is not a regular file.
func regularOrNew(path string) error {
	st, err := os.Lstat(path)
	if err != nil {
		return nil // a new file (a missing directory fails when the file is made)
	}
	what := ""
	switch m := st.Mode(); {
	case m.IsRegular():
		return nil
	case m.IsDir():
		what = "a directory"
	case m&os.ModeSymlink != 0:
		what = "a symbolic link (bank never writes through one)"
	case m&os.ModeNamedPipe != 0:
		what = "a FIFO"
	case m&os.ModeDevice != 0 || m&os.ModeCharDevice != 0:
		what = "a device"
	case m&os.ModeSocket != 0:
		what = "a socket"
	default:
		what = "not a regular file"
	}
	return &NotAFile{path, what}
}
