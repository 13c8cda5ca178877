package pgserver

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// runAs is the unprivileged account that runs PostgreSQL when bank runs as
// root: initdb, pg_ctl and postgres all refuse to run as root. bank itself
// stays root (it writes golden files, coverage and state as before); only
// the server's processes change account, through small wrapper scripts that
// embedded-postgres runs in place of the real binaries.
type runAs struct {
	name     string
	uid, gid int
	drop     []string // command prefix that switches to the account
}

// currentRunAs returns nil when bank is not root.
func currentRunAs() (*runAs, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var u *user.User
	var err error
	for _, name := range []string{"postgres", "nobody"} {
		if u, err = user.Lookup(name); err == nil {
			break
		}
	}
	if u == nil {
		return nil, fmt.Errorf("running as root, and PostgreSQL refuses root: create a 'postgres' account or run bank as another user")
	}
	r := &runAs{name: u.Username}
	r.uid, _ = strconv.Atoi(u.Uid)
	r.gid, _ = strconv.Atoi(u.Gid)
	if p, err := exec.LookPath("setpriv"); err == nil {
		r.drop = []string{p, "--reuid=" + u.Uid, "--regid=" + u.Gid, "--clear-groups", "--"}
	} else if p, err := exec.LookPath("runuser"); err == nil {
		r.drop = []string{p, "-u", u.Username, "--"}
	} else {
		return nil, fmt.Errorf("running as root needs setpriv or runuser (util-linux) to start PostgreSQL as %s", u.Username)
	}
	return r, nil
}

// chown hands a path (recursively) to the account.
func (r *runAs) chown(path string) error {
	if r == nil {
		return nil
	}
	return filepath.Walk(path, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, r.uid, r.gid)
	})
}

// wrap writes, under dir/bin, one script per PostgreSQL program that runs
// the real program as the account, and returns binaries rooted at dir.
func (r *runAs) wrap(real Binaries, dir string) (Binaries, error) {
	if r == nil {
		return real, nil
	}
	binDir := filepath.Join(dir, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return Binaries{}, err
	}
	for _, name := range []string{"pg_ctl", "initdb", "postgres"} {
		var b strings.Builder
		b.WriteString("#!/bin/sh\n")
		b.WriteString("# Written by bank: PostgreSQL refuses to run as root, so it runs as " + r.name + ".\n")
		b.WriteString("cd / || exit 1\nexec")
		for _, arg := range append(r.drop, real.bin(name)) {
			b.WriteString(" " + shellQuote(arg))
		}
		b.WriteString(` "$@"` + "\n")
		if err := writeIfChanged(filepath.Join(binDir, name), b.String(), 0o755); err != nil {
			return Binaries{}, err
		}
	}
	return Binaries{Dir: dir, Major: real.Major, Source: real.Source + ", run as " + r.name}, nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func writeIfChanged(path, content string, mode os.FileMode) error {
	if old, err := os.ReadFile(path); err == nil && string(old) == content {
		return nil
	}
	tmp := path + ".tmp" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, []byte(content), mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// reachable reports whether the account can traverse every directory
// above path: PostgreSQL, running as the account, must reach its data.
func (r *runAs) reachable(path string) error {
	if r == nil {
		return nil
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		info, err := os.Stat(dir)
		if err == nil && info.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("the cache directory %s is inside %s, which the %s account cannot enter; set BANK_CACHE_DIR to a directory such as /var/tmp/bank", path, dir, r.name)
		}
		if dir == filepath.Dir(dir) {
			return nil
		}
	}
}
