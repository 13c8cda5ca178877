package pgserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/zudojs/bank/scenarios/lab/procs"
)

// settings are the server's configuration for a throwaway cluster.
func (s *Server) settings() []string {
	listen, sockets := "", s.slot.dir
	if s.tcp {
		listen = "127.0.0.1"
	}
	if runtime.GOOS == "windows" {
		sockets = ""
	}
	settings := []string{
		"listen_addresses=" + listen,
		"unix_socket_directories=" + sockets,
		"unix_socket_permissions=0700",
		"logging_collector=off",
		// Nothing is flushed to disk. Commits still reach the kernel
		// (synchronous_commit stays on), so a crash of the server keeps
		// committed data, as the crash lessons need.
		"fsync=off",
		"full_page_writes=off",
		"shared_buffers=32MB",
		"max_connections=200",
		"log_min_messages=warning",
		"log_checkpoints=off",
		// Scenario databases are cloned with the FILE_COPY strategy, which
		// copies files instead of writing the template into WAL.
		"wal_level=minimal",
		"max_wal_senders=0",
		"wal_init_zero=off",
		// A slot lives in memory (/dev/shm) between runs: keep two WAL
		// segments, not the five (80 MB) PostgreSQL recycles by default.
		"min_wal_size=32MB",
	}
	if s.Binaries.Major >= 14 { // unknown to PostgreSQL 13, which would refuse to start
		settings = append(settings, "idle_session_timeout=0")
	}
	return settings
}

// launch starts postgres on s.port and waits until it accepts connections.
// The postmaster is started directly (no pg_ctl, whose readiness check
// polls at 100 ms steps) as a child of bank, so that it dies with bank:
// see package procs.
func (s *Server) launch(ctx context.Context) error {
	if s.tcp {
		if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(s.port)); err != nil {
			return &Error{portTaken{s.port}}
		} else {
			l.Close()
		}
	}
	if runtime.GOOS != "windows" {
		// A unix socket's path has room for about 104 bytes.
		if sock := filepath.Join(s.slot.dir, ".s.PGSQL."+strconv.Itoa(s.port)); len(sock) > 100 {
			return envErr("the server's socket path %s is too long for a unix socket: set BANK_CACHE_DIR to a shorter directory", sock)
		}
	}
	logFile, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return envErr("PostgreSQL log: %w", err)
	}
	defer logFile.Close() // the child has its own copy
	args := []string{"-D", s.slot.data, "-p", strconv.Itoa(s.port)}
	for _, kv := range s.settings() {
		args = append(args, "-c", kv)
	}
	spec := s.account.spec(procs.Spec{Path: s.Binaries.bin("postgres"), Args: args, Env: []string{"LC_ALL=C"},
		Stdout: logFile, Stderr: logFile, OnParentDeath: procs.Interrupt})
	if runtime.GOOS != "windows" {
		// The postmaster and its backends hold the slot's lock too: the
		// slot is free only once the last of them has exited.
		spec.ExtraFiles = []*os.File{s.slot.lock}
	}
	pm, err := spec.Start(context.WithoutCancel(ctx)) // it outlives the call that starts it
	if err != nil {
		return envErr("starting postgres: %w", err)
	}
	s.pm = pm
	if err := s.waitReady(ctx); err != nil {
		s.halt(immediate)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	s.ownAddresses()
	return nil
}

// Bounds on a start. PostgreSQL gets as long as it needs while it shows
// that it is getting on: under wine and load it was ready 17 s after it
// started, and a fixed 30 s (which bank had) was not always enough. It is
// given up on after stallLimit without any sign of progress, and after
// startLimit in all, whatever it shows. (Options can shorten both, for
// the tests.)
const (
	stallLimit = time.Minute
	startLimit = 3 * time.Minute
)

// waitReady connects every 2 ms until the server answers or the process
// exits. Signs of progress are: its log grew; its pid file changed (it
// is written early, and says "ready" once recovery is over); a connection
// was refused (nothing listens yet: the postmaster is still setting up)
// or answered "not yet" (SQLSTATE 57P03: starting up, in recovery). What
// is not progress is a connection taken and left unanswered, with nothing
// new in the log: a postmaster that hangs. So a slow start is waited for,
// and a stalled one given up after stallLimit, in one line.
//
// On Windows every connection costs the server a new process (and a slow
// one under load, above all under wine): there it waits for the pid file
// to say "ready" before it connects, so that a storm of connections
// cannot starve the crash recovery it waits for; until then the
// postmaster, alive, is taken to be getting on, as a connection would be
// refused or answered "not yet".
func (s *Server) waitReady(ctx context.Context) error {
	stall, limit := s.limits()
	w := progress{log: s.LogPath, pid: filepath.Join(s.slot.data, "postmaster.pid")}
	w.look()
	began := time.Now()
	last := began // the last sign of progress
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.pm.Exited():
			return s.startFailed()
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if w.changed() {
			last = time.Now()
		}
		if runtime.GOOS == "windows" && !s.saysReady() {
			last = time.Now()
		} else {
			// A connection may take as long as is left: one that hangs
			// is the stall itself.
			wait := min(stall-time.Since(last), limit-time.Since(began))
			err := s.ping(ctx, max(wait, time.Millisecond))
			if err == nil {
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if refusal(err) {
				// Another answer than "not yet" (a password refused): the
				// server is up, and will not let bank in.
				return envErr("PostgreSQL refused bank's connection: %s (log: %s)", reason(err), s.LogPath)
			}
			if notYet(err) || w.changed() {
				last = time.Now()
			}
		}
		if time.Since(last) >= stall && w.look() {
			last = time.Now() // a change the last, throttled, look missed
		}
		if quiet := time.Since(last); quiet >= stall {
			return &Error{notReady(fmt.Sprintf("PostgreSQL stopped getting on with its start: for %s it left a connection unanswered and wrote nothing to its log (%s)", seconds(quiet), s.LogPath))}
		}
		if time.Since(began) >= limit {
			return &Error{notReady(fmt.Sprintf("PostgreSQL was still starting after %s: the machine may be too busy; try again, or see its log (%s)", seconds(limit), s.LogPath))}
		}
	}
}

// limits are the server's stallLimit and startLimit.
func (s *Server) limits() (stall, limit time.Duration) {
	stall, limit = stallLimit, startLimit
	if s.stallLimit > 0 {
		stall = s.stallLimit
	}
	if s.startLimit > 0 {
		limit = s.startLimit
	}
	return stall, limit
}

// notReady is the error for a start that stalled or took too long: not a
// damaged slot, so Start does not copy the slot afresh and wait again.
type notReady string

func (e notReady) Error() string { return string(e) }

func seconds(d time.Duration) string {
	if d >= 2*time.Minute && d%time.Minute == 0 {
		return fmt.Sprintf("%d minutes", d/time.Minute)
	}
	return fmt.Sprintf("%d s", int(d.Round(time.Second)/time.Second))
}

// notYet reports whether a connection failed because the server is not
// ready yet: nothing listens (refused; a unix socket not there yet), or
// PostgreSQL itself answered that it cannot take connections now.
func notYet(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "57P03" // cannot_connect_now
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT)
}

// refusal reports whether PostgreSQL answered a connection with an error
// that waiting does not mend: any but "not yet" and "too many clients".
func refusal(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code != "57P03" && pgErr.Code != "53300"
}

// progress watches a starting server's log and pid file for change.
type progress struct {
	log, pid string
	size     int64
	pidText  string
	looked   time.Time
}

// changed reports whether the log or the pid file changed since the
// last look. It looks at most every 100 ms (a tenth of a second is
// nothing beside the stall limit): under wine every look is a few
// requests to the one wineserver every process of the prefix needs,
// PostgreSQL's among them.
func (p *progress) changed() bool {
	if time.Since(p.looked) < 100*time.Millisecond {
		return false
	}
	return p.look()
}

// look is changed without the wait between looks.
func (p *progress) look() bool {
	p.looked = time.Now()
	var size int64 = -1
	if info, err := os.Stat(p.log); err == nil {
		size = info.Size()
	}
	raw, _ := os.ReadFile(p.pid)
	moved := size != p.size || string(raw) != p.pidText
	p.size, p.pidText = size, string(raw)
	return moved
}

// saysReady reports whether the postmaster's pid file says it accepts
// connections: its eighth line is "ready" (PM_STATUS_READY, PostgreSQL
// 10 and later) once recovery is over.
func (s *Server) saysReady() bool {
	raw, err := os.ReadFile(filepath.Join(s.slot.data, "postmaster.pid"))
	if err != nil {
		return false
	}
	lines := strings.Split(string(raw), "\n")
	return len(lines) > 7 && strings.TrimSpace(lines[7]) == "ready"
}

func (s *Server) ping(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := pgconn.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

func (s *Server) startFailed() error {
	log := s.logTail(15)
	if strings.Contains(log, "Address already in use") && s.tcp {
		return &Error{portTaken{s.port}}
	}
	return envErr("PostgreSQL did not start (full log: %s)\n%s", s.LogPath, log)
}

// shutdown is how the server is asked to stop.
type shutdown int

const (
	fast      shutdown = iota // end the sessions, checkpoint, exit (SIGINT)
	immediate                 // exit at once, as a crash would (SIGQUIT)
)

// halt stops the postmaster and waits for it to exit, escalating if it
// takes too long.
func (s *Server) halt(how shutdown) error {
	pm := s.pm
	if pm == nil {
		return nil
	}
	select {
	case <-pm.Exited():
		return nil
	default:
	}
	if err := signalPostmaster(s, how); err != nil {
		return err
	}
	for _, next := range []func(){func() { pm.Quit() }, pm.Kill} {
		select {
		case <-pm.Exited():
			return nil
		case <-time.After(10 * time.Second):
			next()
		}
	}
	<-pm.Exited()
	return errors.New("PostgreSQL did not stop and had to be killed")
}

// portTaken is the error for a --pg-port in use.
type portTaken struct{ port int }

func (p portTaken) Error() string {
	return fmt.Sprintf("port %d is taken: choose another with --pg-port, or leave it out", p.port)
}
