//go:build !windows

package pgserver

import "os"

// removeTree removes dir and everything below it. os.RemoveAll never
// follows a link: it works relative to directories it opened with
// O_NOFOLLOW, and removes a link itself, not what it points at.
func removeTree(dir string) error { return os.RemoveAll(dir) }

// clearDir removes a slot's directory, so that a fresh copy can take its
// place.
func clearDir(dir string) error { return os.RemoveAll(dir) }
