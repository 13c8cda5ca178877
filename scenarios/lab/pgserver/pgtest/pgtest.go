// Package pgtest gives tests a real PostgreSQL: one server per test
// binary (embedded, or the one in BANK_TEST_DATABASE_URL), and a fresh
// database per test, cloned from the bank's seeded template.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zudojs/bank/scenarios/lab/pgserver"
)

var (
	clones *pgserver.Clones
	server *pgserver.Server
	admin  string
)

// Main starts the server, builds the template database that the tests'
// databases are cloned from (each package says what it holds), runs the
// tests and stops the server. Use it from TestMain.
func Main(m *testing.M, tmpl pgserver.Template) {
	os.Exit(Run(m, tmpl))
}

// Run is Main without the exit: it returns the tests' exit code.
func Run(m *testing.M, tmpl pgserver.Template) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin = os.Getenv("BANK_TEST_DATABASE_URL")
	if admin == "" {
		s, err := pgserver.Start(ctx, pgserver.Options{CacheDir: os.Getenv("BANK_CACHE_DIR")})
		if err != nil {
			fmt.Fprintln(os.Stderr, "pgtest: starting PostgreSQL:", err)
			return 3
		}
		defer s.Stop()
		server = s
		admin = s.URL("postgres")
	}
	c, err := pgserver.Open(ctx, admin, tmpl)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		return 3
	}
	defer c.Close()
	if server != nil {
		if err := c.Throwaway(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
			return 3
		}
	}
	clones = c
	defer removeSeed()
	code := m.Run()
	if server != nil && c.Confined() {
		server.MeasureAtStop()
	}
	return code
}

// AdminURL connects to the test server's maintenance database.
func AdminURL() string { return admin }

// Clones hands out the test binary's databases.
func Clones() *pgserver.Clones { return clones }

// Server is the embedded server, or nil when tests use their own.
func Server() *pgserver.Server { return server }

// DB gives the test a fresh seeded database, dropped when the test ends.
func DB(t testing.TB) (*pgxpool.Pool, *pgserver.Database) {
	t.Helper()
	ctx := context.Background()
	db, err := clones.NewDatabase(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, db.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Close()
		if err := db.Drop(context.Background()); err != nil {
			t.Errorf("dropping %s: %v", db.Name, err)
		}
	})
	return pool, db
}

// CacheDir is a private cache directory for a test that starts servers of
// its own. It already holds the base cluster: a copy of one that initdb
// made once for the whole test binary (initdb costs most of a first run's
// second of CPU, and tens of tests each paid it). A test about the first
// run itself takes FreshCacheDir.
func CacheDir(tb testing.TB) string {
	tb.Helper()
	dir := FreshCacheDir(tb)
	if err := seedCache(dir); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// FreshCacheDir is an empty private cache directory: the lab's first run
// happens in it. As root it is made under /var/tmp and opened to others
// (t.TempDir is 0700, which the postgres account could not enter).
func FreshCacheDir(tb testing.TB) string {
	tb.Helper()
	dir, err := newCacheDir()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { pgserver.RemoveCache(dir) })
	return dir
}

func newCacheDir() (string, error) {
	parent := os.TempDir()
	switch {
	case os.Geteuid() == 0:
		parent = "/var/tmp"
	case runtime.GOOS != "windows" && len(parent) > 20:
		// macOS's $TMPDIR (/var/folders/…/T/, about 49 bytes) would put
		// the slots' unix sockets past the 100 bytes pgserver allows
		// (a socket's path has room for 104): /tmp keeps them short.
		// The directory's name is random, as in $TMPDIR.
		parent = "/tmp"
	}
	dir, err := os.MkdirTemp(parent, "bank-test-")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	return dir, err
}

// seed is the cache whose base cluster CacheDir copies, made on first use.
var seed struct {
	once sync.Once
	dir  string
	err  error
}

// seedCache gives dst the seed's base cluster, as the lab would have
// found it after a first run: the installation directory with its base
// and the base's id, owners and modes kept. The files are hard links
// (cp -al: a copy of each of the 40 MB cost more CPU than the initdb it
// saved), which is safe because the lab only ever reads a base: it
// copies it into a slot. A test that writes into a base takes
// FreshCacheDir. No slot and no server is copied.
func seedCache(dst string) error {
	seed.once.Do(func() {
		if seed.dir, seed.err = newCacheDir(); seed.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s, err := pgserver.Start(ctx, pgserver.Options{CacheDir: seed.dir})
		if err != nil {
			seed.err = fmt.Errorf("pgtest: preparing the seed cache: %w", err)
			return
		}
		s.Stop()
	})
	if seed.err != nil {
		return seed.err
	}
	homes, _ := filepath.Glob(filepath.Join(seed.dir, "pg*"))
	for _, home := range homes {
		info, err := os.Stat(home)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, filepath.Base(home))
		if err := os.Mkdir(to, info.Mode().Perm()); err != nil {
			return err
		}
		from := []string{filepath.Join(home, "base"), filepath.Join(home, "base.id")}
		if out, err := exec.Command("cp", append(append([]string{"-al"}, from...), to)...).CombinedOutput(); err != nil {
			os.RemoveAll(filepath.Join(to, "base")) // cp without -l (BSD): copies, then
			if out, err = exec.Command("cp", append(append([]string{"-a"}, from...), to)...).CombinedOutput(); err != nil {
				return fmt.Errorf("pgtest: seeding %s: %v: %s", dst, err, out)
			}
		}
	}
	return nil
}

// Caches is TestMain for a package whose tests use CacheDir without the
// shared server: it runs them, then removes the seed cache.
func Caches(m *testing.M) {
	code := m.Run()
	removeSeed()
	os.Exit(code)
}

func removeSeed() {
	if seed.dir != "" {
		pgserver.RemoveCache(seed.dir)
	}
}

// BuildBank builds the bank command from the package at pkg (a path
// relative to the test's directory) into a fresh temporary directory,
// and returns the binary and a function that removes it. With
// BANK_TEST_BINARY set, that prebuilt binary is used instead: the
// learner's-machine run (.ci/as-learner) runs the tests as a user who
// has no Go toolchain.
func BuildBank(pkg string) (string, func(), error) {
	if b := os.Getenv("BANK_TEST_BINARY"); b != "" {
		// go test's cache keys a result on the files the test opens or
		// stats, not on the programs it runs: a stat here runs the
		// package again when make test has built another bank.
		if _, err := os.Stat(b); err != nil {
			return "", nil, fmt.Errorf("BANK_TEST_BINARY: %w", err)
		}
		return b, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "bank-bin-")
	if err != nil {
		return "", nil, err
	}
	binary := filepath.Join(dir, "bank")
	if out, err := exec.Command("go", "build", "-o", binary, pkg).CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	// go build read the module's sources; go test's cache must know.
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err == nil {
		err = Inputs(strings.TrimSpace(string(root)))
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("pgtest: the module's sources: %v", err)
	}
	return binary, func() { os.RemoveAll(dir) }, nil
}

// moduleTop is the module's top level that holds sources and test data,
// as the design card fixes it (README.md and the Makefile aside, and bin/
// and dist/, the build's outputs).
var moduleTop = []string{"go.mod", "go.sum", "bank", "cmd", "idem", "scenarios", "testdata"}

// WalkModule walks the module whose folder is root as filepath.WalkDir
// would, but without listing root itself: each entry of the design card's
// top level (and .ci, README.md and the Makefile) in turn. A test that
// listed the module's folder would run again on every make test, as
// Inputs says.
func WalkModule(root string, fn fs.WalkDirFunc) error {
	for _, top := range append(slices.Clone(moduleTop), ".ci", "README.md", "Makefile") {
		err := filepath.WalkDir(filepath.Join(root, top), fn)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// Skip skips t, and notes why in the file BANK_SKIPS names, where a run
// of test binaries sets it (.ci/windows, .ci/as-learner): a test that
// could not run, for want of Chromium or Node.js, is said at the end of
// make test, not only under -v. (make test's go test reads every skip,
// this one's and t.Skip's, from go test -json: .ci/gotest.)
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	why := fmt.Sprintf(format, args...)
	if path := os.Getenv("BANK_SKIPS"); path != "" {
		if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0); err == nil {
			fmt.Fprintf(f, "%s: %s\n", t.Name(), why)
			f.Close()
		}
	}
	t.Skip(why)
}

// Inputs reads every file under each of dirs and throws the bytes away.
// go test's cache keys a package's result on the files its tests open,
// and a program a test runs from testdata (a server of the corpus, a
// lesson's solution, a Go program it builds) is opened by that program,
// not by the test: reading the tree here runs the package again when one
// of those files changes, as a change to the test's own code does.
// Installed packages (node_modules), Python's byte code and git's folder
// are skipped: what installs them is read (a package-lock.json), not what
// was installed. The module's own folder is never listed (the cache notes
// the size and time of every entry of a folder a test lists, and bin/
// changes on every run): for it, the design card's top level is read
// (moduleTop).
func Inputs(dirs ...string) error {
	skip := map[string]bool{"node_modules": true, "__pycache__": true, ".git": true}
	var roots []string
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
			roots = append(roots, dir)
			continue
		}
		for _, top := range moduleTop {
			roots = append(roots, filepath.Join(dir, top))
		}
	}
	for _, dir := range roots {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && path != dir && skip[d.Name()]:
				return filepath.SkipDir
			case d.Type().IsRegular():
				_, err = os.ReadFile(path)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("pgtest: reading the tests' inputs: %w", err)
		}
	}
	return nil
}
