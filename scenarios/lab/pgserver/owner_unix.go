//go:build unix

package pgserver

import (
	"fmt"
	"os"
	"syscall"
)

// owner is the uid that owns a file.
func owner(info os.FileInfo) int { return int(info.Sys().(*syscall.Stat_t).Uid) }

// trusted says why a directory that bank uses but did not just make cannot
// be trusted, or returns nil: it must be a real directory (not a link),
// belong to this user, and be writable by nobody else.
func trusted(path string, info os.FileInfo) error {
	switch {
	case info.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link; bank does not follow links for its own directories: remove it, or set BANK_CACHE_DIR to a directory of your own", path)
	case !info.IsDir():
		return fmt.Errorf("%s is not a directory: remove it, or set BANK_CACHE_DIR to a directory of your own", path)
	case owner(info) != os.Geteuid():
		return fmt.Errorf("%s belongs to another user (uid %d), so bank cannot trust it: remove it, or set BANK_CACHE_DIR to a directory of your own", path, owner(info))
	case info.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s can be written by other users (mode %o): run chmod go-w on it, or set BANK_CACHE_DIR to a directory of your own", path, info.Mode().Perm())
	}
	return nil
}

// safeAncestor says why a directory above the cache cannot be trusted: it
// must belong to root or this user, and anyone else's write access is only
// acceptable with the sticky bit (as on /tmp), where others cannot rename
// or remove what is ours.
func safeAncestor(path string, info os.FileInfo) error {
	if o := owner(info); o != 0 && o != os.Geteuid() {
		return fmt.Errorf("%s, above the cache directory, belongs to another user (uid %d): set BANK_CACHE_DIR to a directory of your own", path, o)
	}
	if info.Mode().Perm()&0o022 != 0 && info.Mode()&os.ModeSticky == 0 {
		return fmt.Errorf("%s, above the cache directory, can be written by other users: set BANK_CACHE_DIR to a directory of your own", path)
	}
	return nil
}

// allocated is the space a file takes (its blocks, not its length: a
// fresh WAL segment is sparse).
func allocated(info os.FileInfo) int64 { return info.Sys().(*syscall.Stat_t).Blocks * 512 }
