package pgserver

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/zudojs/bank/scenarios/lab/procs"
)

// The base cluster is what initdb makes, once per installation: every
// slot starts as a copy of it. (Not to be confused with the seeded
// template database inside a running server; see Template.)

// lockHome takes the installation directory's lock, which two runs
// starting at once hold in turn while they set it up (the base cluster,
// where the slots live). The caller closes the file to release it.
func lockHome(home string) (*os.File, error) {
	lock, err := os.OpenFile(filepath.Join(home, "setup.lock"), os.O_CREATE|os.O_RDONLY, 0o600)
	if err != nil {
		return nil, envErr("setup lock: %w", err)
	}
	if err := lockWait(lock); err != nil {
		lock.Close()
		return nil, envErr("setup lock: %w", err)
	}
	return lock, nil
}

// ensureBase runs initdb unless the base cluster exists; the caller holds
// the home's lock. It returns the base's identity, which a slot records
// to know it holds a copy of this base. If ctx ends first (Ctrl-C during
// a first run), initdb is stopped and its half-made cluster is left for
// the next run to remove.
func ensureBase(ctx context.Context, home string, bin Binaries, account *runAs, say func(string)) (string, error) {
	base := filepath.Join(home, "base")
	idFile := filepath.Join(home, "base.id")
	if id, ok := readSmall(idFile); ok && id != "" {
		if whole(base) {
			return id, nil
		}
		say("the lab's PostgreSQL cluster in " + home + " is damaged (an interrupted first run, or a power cut): making it again")
		os.Remove(idFile) // every slot's copy is then stale, and is copied afresh
	}
	// Measured (bank help speed): 1 s on an idle 2-core machine, 6-12 s
	// as an unprivileged user at a load of 22 on it, 33-62 s on a busier
	// one. What is said is the range; a line every few seconds says it
	// has not stopped.
	say(fmt.Sprintf("preparing a PostgreSQL %d cluster for the lab (first run only: about a second on an idle machine, up to a minute on a busy one)", bin.Major))
	defer still(say, "still preparing the cluster (initdb)")()
	building := base + ".building"
	if err := removeTree(building); err != nil {
		return "", envErr("base cluster: %w", err)
	}
	if err := os.Mkdir(building, 0o700); err != nil {
		return "", envErr("base cluster: %w", err)
	}
	if err := account.give(building); err != nil {
		return "", envErr("base cluster: %w", err)
	}
	args := []string{"-D", building, "-U", superuser, "-E", "UTF8", "--locale=C", "--no-sync",
		// Unix sockets in a directory only the user can enter are the
		// lock on the door; TCP, where it is used, needs the password.
		"--auth-local=trust", "--auth-host=scram-sha-256"}
	if runtime.GOOS == "windows" {
		pw := filepath.Join(home, "base.password")
		if err := writeFile(pw, []byte(randomHex(16)+"\n"), 0o600); err != nil {
			return "", envErr("base cluster: %w", err)
		}
		args = append(args, "--pwfile="+pw)
	}
	initdb := account.spec(procs.Spec{Path: bin.bin("initdb"), Args: args, Env: []string{"LC_ALL=C"}})
	if err := initdb.Run(ctx); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("preparing the cluster: %w", ctx.Err())
		}
		return "", envErr("initdb failed: %v\n%s", err, initdb.Output.LastLines(10))
	}
	// initdb ran with --no-sync (it is much faster): the tree is synced
	// once here, before anything trusts it, so that a power cut after a
	// first run cannot leave a base cluster that only looks whole.
	if err := syncTree(building); err != nil {
		return "", envErr("base cluster: %w", err)
	}
	if err := removeTree(base); err != nil {
		return "", envErr("base cluster: %w", err)
	}
	if err := os.Rename(building, base); err != nil {
		return "", envErr("base cluster: %w", err)
	}
	id := randomHex(8)
	if err := writeFile(idFile, []byte(id), 0o600); err != nil {
		return "", envErr("base cluster: %w", err)
	}
	return id, nil
}

// whole reports whether a base cluster has what every start reads first:
// its version file and a control file of full size (PostgreSQL stops with
// a PANIC on a truncated one).
func whole(base string) bool {
	if _, err := os.Lstat(filepath.Join(base, "PG_VERSION")); err != nil {
		return false
	}
	info, err := os.Lstat(filepath.Join(base, "global", "pg_control"))
	return err == nil && info.Mode().IsRegular() && info.Size() == pgControlSize
}

// pgControlSize is PG_CONTROL_FILE_SIZE, the same in every version since 8.x.
const pgControlSize = 8192

// syncTree flushes every file and directory below dir to disk.
func syncTree(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return nil
		}
		flag := os.O_RDONLY
		if runtime.GOOS == "windows" && !d.IsDir() {
			flag = os.O_RDWR // FlushFileBuffers needs a handle that may write
		}
		f, err := os.OpenFile(path, flag, 0)
		if err != nil {
			return err
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil && d.IsDir() && runtime.GOOS == "windows" {
			return nil // Windows cannot flush a directory; its files are flushed
		}
		return err
	})
}

// stillEvery is how often a long step says it is still going.
const stillEvery = 5 * time.Second

// still says what (with the time so far) every stillEvery until the
// returned stop is called, so that a slow step is never silent for long.
func still(say func(string), what string) (stop func()) {
	start := time.Now()
	t := time.NewTicker(stillEvery)
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case <-t.C:
				say(fmt.Sprintf("%s: %d s so far", what, int(time.Since(start).Seconds()+0.5)))
			case <-done:
				return
			}
		}
	}()
	return func() { t.Stop(); close(done); <-exited }
}
