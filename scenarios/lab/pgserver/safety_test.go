//go:build unix

package pgserver_test

import (
	"context"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/scenarios/lab/pgserver"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
	"github.com/zudojs/bank/scenarios/lab/procs"
)

// otherUser is an account that is not the one running the tests.
func otherUser(t *testing.T) (uid, gid int) {
	t.Helper()
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal("the test needs a 'nobody' account:", err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid
}

// TestOtherUsersCannotConnect: the server's only door is a unix socket in
// a directory that only its owner can enter. As root, psql run as another
// account is refused; as anyone, the directory is private.
func TestOtherUsersCannotConnect(t *testing.T) {
	t.Parallel()
	s := start(t, pgserver.Options{CacheDir: pgtest.CacheDir(t)})
	line := s.Psql("postgres")[0].Line // [path/]psql 'host=DIR port=…'
	host, _, _ := strings.Cut(line[strings.Index(line, "'host=")+len("'host="):], " port=")
	info, err := os.Lstat(host)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o700 {
		t.Fatalf("socket directory %s has mode %o, want 0700", host, info.Mode().Perm())
	}
	if os.Geteuid() != 0 {
		if owner := info.Sys().(*syscall.Stat_t).Uid; int(owner) != os.Geteuid() {
			t.Fatalf("socket directory belongs to uid %d, not to the user running bank", owner)
		}
		return
	}
	uid, gid := otherUser(t)
	// psql, from the installation or from PATH, tries to connect; where
	// there is none (the npm registry's installations have no psql), ls
	// looks for the socket: both need to enter the directory.
	argv := []string{"ls", filepath.Join(host, ".s.PGSQL.5432")}
	for _, p := range []string{filepath.Join(s.Binaries.Dir, "bin", "psql"), "psql"} {
		if path, err := exec.LookPath(p); err == nil {
			argv = []string{path, "-w", "-c", "SELECT 1", "host=" + host + " port=5432 user=postgres dbname=postgres"}
			break
		}
	}
	other := exec.Command(argv[0], argv[1:]...)
	other.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
	other.Dir = "/"
	out, err := other.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Permission denied") {
		t.Fatalf("another user's %s: %v\n%s", filepath.Base(argv[0]), err, out)
	}
}

// TestTCPPasswordPerRun: with a TCP port, the password is made for each
// run, lives in a 0600 file, opens the door over TCP, and appears on no
// command line; the previous run's password no longer works.
func TestTCPPasswordPerRun(t *testing.T) {
	t.Parallel()
	dir := pgtest.CacheDir(t)
	port, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	first := start(t, pgserver.Options{CacheDir: dir, Port: port})
	pw1 := password(t, first)
	tcp := func(pw string) error {
		c, err := pgx.Connect(context.Background(), "postgres://postgres:"+pw+"@127.0.0.1:"+strconv.Itoa(port)+"/postgres?sslmode=disable")
		if err == nil {
			c.Close(context.Background())
		}
		return err
	}
	if err := tcp(pw1); err != nil {
		t.Fatalf("the run's password does not open TCP: %v", err)
	}
	if err := tcp("wrong"); err == nil {
		t.Fatal("a wrong password was accepted over TCP")
	}
	if who := onACommandLine(pw1); who != "" {
		t.Fatalf("the password is on a command line: %s", who)
	}
	first.Stop()
	second := start(t, pgserver.Options{CacheDir: dir, Port: port})
	pw2 := password(t, second)
	if pw1 == pw2 {
		t.Fatal("the password did not change between runs")
	}
	if err := tcp(pw1); err == nil {
		t.Fatal("the previous run's password still works")
	}
}

func password(t *testing.T, s *pgserver.Server) string {
	t.Helper()
	info, err := os.Stat(s.PassFile())
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("password file %q: %v, mode %v", s.PassFile(), err, info)
	}
	raw, _ := os.ReadFile(s.PassFile())
	f := strings.Split(strings.TrimSpace(string(raw)), ":")
	return f[len(f)-1]
}

// onACommandLine names a process whose command line contains secret.
func onACommandLine(secret string) string {
	lines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, l := range lines {
		raw, _ := os.ReadFile(l)
		if strings.Contains(string(raw), secret) {
			return l + ": " + strings.ReplaceAll(string(raw), "\x00", " ")
		}
	}
	return ""
}

// TestUntrustedCacheDirIsRefused: a cache directory that another user
// made, that others can write, or that is a link, is refused with one
// line that names it and the fix, and nothing is written into it.
func TestUntrustedCacheDirIsRefused(t *testing.T) {
	t.Parallel()
	parent := pgtest.FreshCacheDir(t)
	foreign := filepath.Join(parent, "foreign")
	os.Mkdir(foreign, 0o777)
	os.Chmod(foreign, 0o777)
	want := "can be written by other users"
	if os.Geteuid() == 0 {
		uid, gid := otherUser(t)
		os.Chmod(foreign, 0o755)
		os.Chown(foreign, uid, gid)
		want = "belongs to another user"
	}
	link := filepath.Join(parent, "link")
	os.Symlink(t.TempDir(), link)
	for dir, want := range map[string]string{foreign: want, link: "is a symbolic link"} {
		_, err := pgserver.Start(context.Background(), pgserver.Options{CacheDir: dir})
		if err == nil || !strings.Contains(err.Error(), dir+" "+want) || !strings.Contains(err.Error(), "BANK_CACHE_DIR") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: want one line saying it %s, got %v", dir, want, err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%s: bank wrote into it: %v", dir, entries)
		}
	}
}

// TestRootCopiesAsTheAccount: as root, a slot is filled by the account
// that runs PostgreSQL, so a link that account plants in the base cluster
// cannot make root copy a root-only file into the slot.
func TestRootCopiesAsTheAccount(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("about root: an ordinary user copies only its own files")
	}
	dir := pgtest.CacheDir(t)
	s := start(t, pgserver.Options{CacheDir: dir})
	s.Stop()
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("root only"), 0o600)
	bases, _ := filepath.Glob(filepath.Join(dir, "pg*", "base"))
	if err := os.Symlink(secret, filepath.Join(bases[0], "planted")); err != nil {
		t.Fatal(err)
	}
	os.Remove(strings.TrimSuffix(s.LogPath, ".log") + ".base") // the slot must be filled again
	again := start(t, pgserver.Options{CacheDir: dir})
	owner := int(-1)
	filepath.WalkDir(again.DataDir(), func(p string, d os.DirEntry, err error) error {
		info, _ := os.Lstat(p)
		if uid := int(info.Sys().(*syscall.Stat_t).Uid); uid == 0 {
			t.Errorf("%s belongs to root: root wrote into the account's slot", p)
		} else {
			owner = uid
		}
		if raw, _ := os.ReadFile(p); d.Type().IsRegular() && strings.Contains(string(raw), "root only") {
			t.Errorf("%s holds the root-only file's content", p)
		}
		return nil
	})
	if owner < 0 {
		t.Fatal("the slot is empty")
	}
}
