//go:build unix

package pgserver_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/scenarios/lab/pgserver"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// withPostgres is an installation like the real one, but whose postgres
// is script (a shell script, which may exec the real one, named
// $REAL): pg_ctl and initdb are links to the real ones (initdb runs the
// real postgres beside it). It lives where the account running
// PostgreSQL as root can reach it.
func withPostgres(t *testing.T, script string) string {
	t.Helper()
	real := start(t, pgserver.Options{CacheDir: pgtest.CacheDir(t)})
	real.Stop()
	dir := filepath.Join(pgtest.FreshCacheDir(t), "pg")
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"pg_ctl", "initdb"} {
		if err := os.Symlink(filepath.Join(real.Binaries.Dir, "bin", name), filepath.Join(dir, "bin", name)); err != nil {
			t.Fatal(err)
		}
	}
	script = "#!/bin/sh\nREAL='" + filepath.Join(real.Binaries.Dir, "bin", "postgres") + "'\n" + script
	if err := os.WriteFile(filepath.Join(dir, "bin", "postgres"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestSlowStartIsWaitedFor: a postmaster that takes 35 s to set up (more
// than the fixed 30 s bank once gave it, after which it gave up: under
// wine and load PostgreSQL was ready after 17 s, and bank's 30 s ran
// out), saying so in its log and listening nowhere meanwhile, is waited
// for, and the server then answers.
func TestSlowStartIsWaitedFor(t *testing.T) {
	t.Parallel()
	bin := withPostgres(t, `i=0
while [ $i -lt 35 ]; do
  echo "still setting up: $i s"
  sleep 1
  i=$((i + 1))
done
exec "$REAL" "$@"
`)
	s := start(t, pgserver.Options{CacheDir: pgtest.CacheDir(t), Binaries: bin})
	query(t, s.URL("postgres"), "SELECT 'up'")
}

// TestStalledStartFailsInOneLine: a start that stops getting on is given
// up on in one line that names the log, and its postmaster is stopped;
// so is one that takes longer than the bound on a whole start, even
// while it gets on. The bounds are shortened here (a minute without
// progress, three minutes in all, in bank).
func TestStalledStartFailsInOneLine(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		listen bool // the test takes the postmaster's socket and never answers
		want   string
	}{
		{"a connection taken and left unanswered", true, "PostgreSQL stopped getting on with its start: for 2 s it left a connection unanswered and wrote nothing to its log ("},
		{"nothing listening, for longer than a start may take", false, "PostgreSQL was still starting after 4 s: the machine may be too busy; try again, or see its log ("},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// The postmaster tells where its socket is, and its pid, and
			// sleeps: alive, never listening, writing nothing to its log.
			told := filepath.Join(pgtest.FreshCacheDir(t), "told")
			if err := os.Mkdir(told, 0o777); err != nil {
				t.Fatal(err)
			}
			os.Chmod(told, 0o777) // the account running PostgreSQL as root writes here
			bin := withPostgres(t, `echo $$ >'`+told+`/pid.tmp'
for a in "$@"; do echo "$a"; done >'`+told+`/args.tmp'
mv '`+told+`/args.tmp' '`+told+`/args'
mv '`+told+`/pid.tmp' '`+told+`/pid'
exec sleep 3600
`)
			if c.listen {
				go answerNothing(t, told)
			}
			o := pgserver.WithStartLimits(pgserver.Options{CacheDir: pgtest.CacheDir(t), Binaries: bin}, 2*time.Second, 4*time.Second)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a bound against a hang
			defer cancel()
			s, err := pgserver.Start(ctx, o)
			if err == nil {
				s.Stop()
				t.Fatal("the start did not fail")
			}
			var envErr *pgserver.Error
			if msg := err.Error(); !errors.As(err, &envErr) || !strings.HasPrefix(msg, c.want) || strings.Contains(msg, "\n") || !strings.HasSuffix(msg, ".log)") {
				t.Errorf("error %q (%T), want one line starting %q and naming the log", msg, err, c.want)
			}
			raw, err := os.ReadFile(filepath.Join(told, "pid"))
			if err != nil {
				t.Fatal(err)
			}
			if pid, _ := strconv.Atoi(strings.TrimSpace(string(raw))); alive(pid) {
				t.Errorf("the postmaster (pid %d) was left running", pid)
			}
		})
	}
}

// answerNothing takes the socket the postmaster would listen on, once it
// has said where that is, and holds every connection without a word.
func answerNothing(t *testing.T, told string) {
	var args []string
	for {
		raw, err := os.ReadFile(filepath.Join(told, "args"))
		if err == nil {
			args = strings.Split(string(raw), "\n")
			break
		}
		time.Sleep(time.Millisecond)
	}
	dir, port := "", ""
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "unix_socket_directories="); ok {
			dir = v
		}
		if a == "-p" && i+1 < len(args) {
			port = args[i+1]
		}
	}
	l, err := net.Listen("unix", filepath.Join(dir, ".s.PGSQL."+port))
	if err != nil {
		t.Errorf("listening in the postmaster's place: %v", err)
		return
	}
	t.Cleanup(func() { l.Close() })
	var held []net.Conn
	for {
		c, err := l.Accept()
		if err != nil {
			for _, c := range held {
				c.Close()
			}
			return
		}
		held = append(held, c)
	}
}

// TestSlowConnectionToOwnServer: a connection to the lab's own server
// that takes longer than the 10 s a --database-url's may take (its
// postmaster paused 15 s: under wine and load, each connection a new
// postgres.exe, one took more than 10 s and the run failed with "no
// answer within 10s") is waited for.
func TestSlowConnectionToOwnServer(t *testing.T) {
	t.Parallel()
	s := start(t, pgserver.Options{CacheDir: pgtest.CacheDir(t)})
	pm := s.PID()
	if err := syscall.Kill(pm, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := make(chan struct{})
	go func() {
		defer close(resumed)
		time.Sleep(15 * time.Second)
		syscall.Kill(pm, syscall.SIGCONT)
	}()
	defer func() { <-resumed }()
	tmpl := pgserver.Template{Prefix: "slowconn", Schema: "v1", Setup: func(context.Context, *pgx.Conn) error { return nil }}
	c, err := pgserver.Open(context.Background(), s.URL("postgres"), tmpl)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}
