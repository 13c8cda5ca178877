package pgserver

import (
	"errors"
	"fmt"
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
	os.Remove(s.password)                   // a fresh copy has the base cluster's password
	if err := clearDir(s.dir); err != nil { // does not follow links
		return envErr("clearing slot: %w", err)
	}
	if err := os.Mkdir(s.dir, 0o700); err != nil {
		return envErr("slot: %w", err)
	}
	if err := account.give(s.dir); err != nil {
		return envErr("slot: %w", err)
	}
	if err := account.copyDir(base, s.data); err != nil {
		clearDir(s.dir) // no half slot: the next run copies afresh
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

// Bounds on what a slot may keep between runs, beyond its copy of the
// base cluster. PostgreSQL keeps the WAL a run wrote, up to max_wal_size
// (1 GB), for reuse, and a learner's code may write without bound; a slot
// that grew past these is thrown away at Stop (or at the next Start), and
// the next run copies it afresh: the base cluster's copy and the template,
// 0.5 s more than a warm run (0.74 s against 0.24 s for scenario
// lost-response). Measured on PostgreSQL 15 (allocated bytes), the base 39 MB:
// after scenario all 61 MB (WAL 17 MB); after a grade 97 MB (WAL 22 MB,
// the rest the databases a grade leaves to the next run to drop); after
// two benches 101 MB (WAL 48 MB); after a learner's statement that wrote
// 100 MB, 350 MB (WAL 149 MB).
const (
	walBound   = 64 << 20 // pg_wal, always measured: two min_wal_size's worth
	slotGrowth = 96 << 20 // the whole slot beyond the base, measured after a learner's code ran

	// maxDatabases: past this many databases (the lab needs a dozen:
	// PostgreSQL's three, a template and a spare per kind of run, the
	// runs going on), a slot is copied afresh.
	maxDatabases = 64
)

// usage is the space the files below dir take, or -1 when it cannot be
// read at all.
func usage(dir string) int64 {
	if _, err := os.Lstat(dir); err != nil {
		return -1
	}
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil { // else a file that went away, or cannot be read: skipped
			if info, err := d.Info(); err == nil {
				n += allocated(info)
			}
		}
		return nil
	})
	return n
}

// grown says why the slot (its server stopped) should not be kept, or ""
// when it may be: its WAL is past walBound or, with base (the base
// cluster's directory) given, the whole slot has grown past the base by
// more than slotGrowth.
func (s *slot) grown(base string) string {
	if wal := usage(filepath.Join(s.data, "pg_wal")); wal > walBound {
		return fmt.Sprintf("its WAL had grown to %d MB", wal>>20)
	}
	// Each database is a folder of base/. Runs cut short (interrupted,
	// killed) leave theirs, and the next run drops them behind it; a slot
	// that many cut runs left more than it can drop quickly is copied
	// afresh instead.
	if dbs, err := os.ReadDir(filepath.Join(s.data, "base")); err == nil && len(dbs) > maxDatabases {
		return fmt.Sprintf("it held %d databases, left by runs cut short", len(dbs))
	}
	if base == "" {
		return ""
	}
	if total, b := usage(s.data), usage(base); b > 0 && total > b+slotGrowth {
		return fmt.Sprintf("it had grown to %d MB", total>>20)
	}
	return ""
}

// discard throws the slot's copy away, so that the next run copies it
// afresh; the stamp goes first, so that a removal cut short is redone.
func (s *slot) discard() error {
	os.Remove(s.stamp)
	os.Remove(s.password)
	return clearDir(s.dir) // does not follow links
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
