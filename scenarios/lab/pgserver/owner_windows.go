package pgserver

import (
	"fmt"
	"os"
)

// On Windows a user's profile directory is private by its access list;
// bank checks only that its directories are real directories.
func trusted(path string, info os.FileInfo) error {
	if info.Mode()&os.ModeSymlink != 0 || !info.IsDir() {
		return fmt.Errorf("%s is not a plain directory: remove it, or set BANK_CACHE_DIR to a directory of your own", path)
	}
	return nil
}

func safeAncestor(string, os.FileInfo) error { return nil }

// allocated is the space a file takes: its length, on Windows.
func allocated(info os.FileInfo) int64 { return info.Size() }
