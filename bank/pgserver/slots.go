package pgserver

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A slot is where one running server lives: N.lock (held while the
// server runs, also by the postmaster itself, so a slot stays taken until
// the server is really down), N.log (PostgreSQL's log for the run), N.base
// (which base cluster the slot holds a copy of), and N/, the account's
// own directory with the cluster in N/data and the server's unix socket.
type slot struct {
	dir, data, log, stamp string
	password              string // Windows: the password the last run set
	lock                  *os.File
}

const maxSlots = 64

// takeSlot locks the first free slot in dir.
func takeSlot(dir string) (*slot, error) {
	for n := 0; n < maxSlots; n++ {
		name := filepath.Join(dir, strconv.Itoa(n))
		lock, err := os.OpenFile(name+".lock", os.O_CREATE|os.O_RDONLY, 0o600)
		if err != nil {
			return nil, envErr("slot lock: %w", err)
		}
		if ok, err := tryLock(lock); !ok {
			lock.Close()
			if err != nil {
				return nil, envErr("slot lock %s: %w", name+".lock", err)
			}
			continue
		}
		return &slot{dir: name, data: filepath.Join(name, "data"), log: name + ".log", stamp: name + ".base", password: name + ".password", lock: lock}, nil
	}
	return nil, envErr("all %d server slots in %s are busy: stop some bank runs, or wait for them", maxSlots, dir)
}

// holds reports whether the slot has a complete copy of base cluster id.
func (s *slot) holds(id string) bool {
	stamp, _ := readSmall(s.stamp)
	_, err := os.Lstat(filepath.Join(s.data, "PG_VERSION"))
	return stamp == id && err == nil
}

// fill gives the slot a fresh copy of the base cluster. The stamp is
// written last, so a copy cut short is redone next time.
func (s *slot) fill(base, id string, account *runAs) error {
	os.Remove(s.stamp)
	os.Remove(s.password)                       // a fresh copy has the base cluster's password
	if err := os.RemoveAll(s.dir); err != nil { // does not follow links
		return envErr("clearing slot: %w", err)
	}
	if err := os.Mkdir(s.dir, 0o700); err != nil {
		return envErr("slot: %w", err)
	}
	if err := account.give(s.dir); err != nil {
		return envErr("slot: %w", err)
	}
	if err := account.copyDir(base, s.data); err != nil {
		os.RemoveAll(s.dir) // no half slot: the next run copies afresh
		if errors.Is(err, syscall.ENOSPC) || strings.Contains(err.Error(), "No space left") {
			return envErr("copying the base cluster into %s: no space left on the device; free some, or set BANK_CACHE_DIR to a directory on a larger disk", filepath.Dir(s.dir))
		}
		return envErr("copying the base cluster: %w", err)
	}
	if err := writeFile(s.stamp, []byte(id), 0o600); err != nil {
		return envErr("slot: %w", err)
	}
	return nil
}

func (s *slot) release() {
	if s != nil && s.lock != nil {
		s.lock.Close()
		s.lock = nil
	}
}

// slotsBusy reports whether any slot lock in dir is held.
func slotsBusy(dir string) bool {
	locks, _ := filepath.Glob(filepath.Join(dir, "*.lock"))
	for _, l := range locks {
		f, err := os.Open(l)
		if err != nil {
			continue
		}
		ok, _ := tryLock(f)
		f.Close() // also releases the lock if we got it
		if !ok {
			return true
		}
	}
	return false
}

// copyTree copies a directory tree that belongs to the user running bank,
// keeping modes and links; it never follows a link.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(target, info.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case !d.Type().IsRegular():
			return errors.New(p + " is not a regular file")
		}
		in, err := openNoFollow(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, info.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// slotHeadroom is what a running server adds to its copy of the base
// cluster: its WAL (min_wal_size) and a margin for the scenario's rows.
const slotHeadroom = 40 << 20

// roomFor reports whether dir's file system has room for a slot holding
// a copy of base, with what it has and what a slot needs. Only a small
// file system is measured (walking base costs a little).
func roomFor(base, dir string) (free, need uint64, ok bool) {
	free, known := freeBytes(dir)
	if !known || free > 1<<30 {
		return free, 0, true
	}
	var size uint64
	filepath.WalkDir(base, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				size += uint64(info.Size())
			}
		}
		return nil
	})
	need = size + slotHeadroom
	return free, need, free >= need
}
