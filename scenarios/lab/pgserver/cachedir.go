package pgserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// The cache directory, made in one place and in order (see layout in the
// package documentation). Every directory bank makes or reuses is checked
// without following links before it is trusted: it must be a real
// directory, belong to the user running bank, and be writable by nobody
// else; the directories above it must belong to root or that user.

// DefaultCacheDir is where clusters are kept when Options.CacheDir is
// empty: the user's cache directory, or for root on Linux /var/cache/bank,
// which the account that runs PostgreSQL can reach and no other can write.
func DefaultCacheDir() (string, error) {
	if runtime.GOOS == "linux" && os.Geteuid() == 0 {
		return "/var/cache/bank", nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the lab's PostgreSQL (%v): set HOME, or BANK_CACHE_DIR to a directory of your own", err)
	}
	return filepath.Join(d, "bank"), nil
}

// dirMode is the mode of bank's directories: private to the user, but for
// root, which runs PostgreSQL as another account, enterable (not
// readable) by that account.
func dirMode(account *runAs) os.FileMode {
	if account != nil {
		return 0o711
	}
	return 0o700
}

// ensureCacheDir makes the cache directory, and any missing parents, and
// checks it and everything above it.
func ensureCacheDir(dir string, mode os.FileMode) error {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return fmt.Errorf("cannot make the lab's cache directory %s (%v): set BANK_CACHE_DIR to a directory of your own, or HOME to your home", dir, errors.Unwrap(err))
	}
	real, err := filepath.EvalSymlinks(parent)
	if err != nil {
		return fmt.Errorf("cache directory: %w", err)
	}
	for p := real; ; p = filepath.Dir(p) {
		info, err := os.Lstat(p)
		if err != nil {
			return fmt.Errorf("cache directory: %w", err)
		}
		if err := safeAncestor(p, info); err != nil {
			return err
		}
		if p == filepath.Dir(p) {
			break
		}
	}
	return ensureDir(dir, mode)
}

// ensureDir makes dir if it is missing (its parent must already be
// trusted) and checks it.
func ensureDir(dir string, mode os.FileMode) error {
	if err := os.Mkdir(dir, mode); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("making %s: %w", dir, err)
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if err := trusted(dir, info); err != nil {
		return err
	}
	if perm := info.Mode().Perm(); perm&mode != mode {
		// A directory of ours that the account running PostgreSQL must
		// enter (root's case): add the bits, never more.
		return os.Chmod(dir, perm|mode)
	}
	return nil
}

// writeFile replaces path with content through a fresh temporary file in
// the same (trusted) directory, so nobody ever sees half a file and no
// link is followed.
func writeFile(path string, content []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(content)
	if err == nil {
		err = tmp.Sync() // on disk before the name points at it: a power cut leaves the old file or the new
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), mode)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// readSmall reads a small file of bank's own, without following a link.
func readSmall(path string) (string, bool) {
	info, err := os.Lstat(path)
	if err != nil || !info.Mode().IsRegular() || info.Size() > 4096 {
		return "", false
	}
	raw, err := os.ReadFile(path)
	return strings.TrimSpace(string(raw)), err == nil
}

// memoryRoot is where slots go when they can live in memory: Linux's
// /dev/shm. Elsewhere the slots stay in the cache directory.
const memoryRoot = "/dev/shm"

// memorySlots returns a directory in memory for the slots of home, or ""
// when there is none to use. Its name is random (nothing with a fixed name
// in a shared directory); home records it in a file named "memory", and
// the directory records home in a file named "home", so that either can
// be checked against the other.
func memorySlots(home string, mode os.FileMode) string {
	if runtime.GOOS != "linux" {
		return ""
	}
	if info, err := os.Stat(memoryRoot); err != nil || !info.IsDir() {
		return ""
	}
	record := filepath.Join(home, "memory")
	if dir, ok := readSmall(record); ok && filepath.Dir(dir) == memoryRoot {
		if info, err := os.Lstat(dir); err == nil && trusted(dir, info) == nil {
			if back, _ := readSmall(filepath.Join(dir, "home")); back == home {
				return dir
			}
		}
	}
	collectMemory()
	dir, err := os.MkdirTemp(memoryRoot, "bank-")
	if err != nil {
		return ""
	}
	if os.Chmod(dir, mode) != nil || writeFile(filepath.Join(dir, "home"), []byte(home), 0o600) != nil ||
		writeFile(record, []byte(dir), 0o600) != nil {
		os.RemoveAll(dir)
		return ""
	}
	return dir
}

// collectMemory removes this user's in-memory slot directories whose
// cache directory is gone or no longer points at them, unless a server is
// running in one.
func collectMemory() {
	dirs, _ := filepath.Glob(filepath.Join(memoryRoot, "bank-*"))
	for _, dir := range dirs {
		info, err := os.Lstat(dir)
		if err != nil || trusted(dir, info) != nil {
			continue // not ours
		}
		if time.Since(info.ModTime()) < 10*time.Minute {
			continue // perhaps being set up by another run right now
		}
		home, _ := readSmall(filepath.Join(dir, "home"))
		if back, _ := readSmall(filepath.Join(home, "memory")); home != "" && back == dir {
			continue
		}
		if !slotsBusy(dir) {
			os.RemoveAll(dir)
		}
	}
}

// RemoveCache deletes a cache directory and the in-memory slots that
// belong to it. Servers using it must be stopped first.
func RemoveCache(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	homes, _ := filepath.Glob(filepath.Join(abs, "pg*"))
	for _, home := range homes {
		if mem, ok := readSmall(filepath.Join(home, "memory")); ok && filepath.Dir(mem) == memoryRoot {
			if back, _ := readSmall(filepath.Join(mem, "home")); back == home {
				os.RemoveAll(mem)
			}
		}
	}
	return removeTree(abs)
}
