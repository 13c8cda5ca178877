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
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/zudojs/bank/bank/procs"
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
	return nil
}

// waitReady connects every 2 ms until the server answers, the
// process exits, or 30 seconds pass. On Windows every connection costs
// the server a new process (and a slow one under load, above all under
// wine): there it waits for the pid file to say "ready" before it
// connects, so that a storm of refused connections cannot starve the
// crash recovery it waits for, and gives a connection 10 s, not 1 s.
func (s *Server) waitReady(ctx context.Context) error {
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.pm.Exited():
			return s.startFailed()
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return s.startFailed()
		case <-tick.C:
			if runtime.GOOS == "windows" && !s.saysReady() {
				continue
			}
			if s.ping(ctx) == nil {
				return nil
			}
		}
	}
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

func (s *Server) ping(ctx context.Context) error {
	timeout := time.Second
	if runtime.GOOS == "windows" {
		timeout = 10 * time.Second
	}
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
