//go:build unix

package pgserver

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"

	"github.com/zudojs/bank/scenarios/lab/procs"
)

// runAs is the unprivileged account that runs PostgreSQL when bank runs as
// root: initdb and postgres refuse to run as root. bank itself stays root;
// only the server's processes change account, which the kernel does for
// them at exec (no wrapper scripts, no setpriv). Root never reads or
// writes inside the directories that account owns: copies and removals
// there run as the account, or through calls that do not follow links.
type runAs struct {
	name     string
	uid, gid int
}

// currentRunAs returns nil when bank is not root.
func currentRunAs() (*runAs, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "_postgres", "nobody"} { // _postgres: macOS
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.Atoi(u.Uid)
		gid, err2 := strconv.Atoi(u.Gid)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		return &runAs{name: u.Username, uid: uid, gid: gid}, nil
	}
	return nil, fmt.Errorf("running as root, and PostgreSQL refuses root: create a 'postgres' account (macOS has '_postgres'), or run bank as an ordinary user")
}

// spec makes s run as the account (as is, when bank is not root).
func (r *runAs) spec(s procs.Spec) procs.Spec {
	if r == nil {
		return s
	}
	s.Account = &procs.Account{UID: r.uid, GID: r.gid}
	if s.Dir == "" {
		s.Dir = "/"
	}
	return s
}

// give hands one directory that bank has just made (so not a link) to the
// account.
func (r *runAs) give(dir string) error {
	if r == nil {
		return nil
	}
	return os.Lchown(dir, r.uid, r.gid)
}

// copyDir copies a cluster directory: as the account with cp when root
// (the account owns both ends), in-process otherwise.
func (r *runAs) copyDir(src, dst string) error {
	if r == nil {
		return copyTree(src, dst)
	}
	cp := r.spec(procs.Spec{Path: "cp", Args: []string{"-a", src, dst}})
	if err := cp.Run(context.Background()); err != nil {
		return fmt.Errorf("cp -a as %s: %v: %s", r.name, err, cp.Output.LastLines(3))
	}
	return nil
}

func (r *runAs) String() string {
	if r == nil {
		return ""
	}
	return ", run as " + r.name
}

// reach says why the account cannot get to dir, or returns nil: it must be
// able to enter every directory above it. (bank makes dir itself
// enterable.)
func (r *runAs) reach(dir string) error {
	if r == nil {
		return nil
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		info, err := os.Stat(p)
		if err == nil && info.Mode().Perm()&0o001 == 0 && owner(info) != r.uid {
			return fmt.Errorf("the cache directory %s is inside %s, which the %s account that runs PostgreSQL cannot enter: set BANK_CACHE_DIR to a directory such as /var/cache/bank", dir, p, r.name)
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}
