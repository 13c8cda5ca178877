package pgserver

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// BANK_PG_FALLBACK (the PostgreSQL the npm launcher brought) stands in for
// the download only: --pg-binaries and an installed PostgreSQL come first.
func TestFallbackPrecedence(t *testing.T) {
	t.Parallel()
	installed, ok := installedBinaries()
	if !ok {
		t.Skip("no PostgreSQL installed to stand in for the fallback")
	}
	say := func(string) {}
	find := func(o Options) (Binaries, error) {
		o.LibraryCache = filepath.Join(t.TempDir(), "library") // nothing downloaded before
		return findBinaries(context.Background(), o, t.TempDir(), say)
	}

	b, err := find(Options{Fallback: installed.Dir, SkipInstalled: true})
	if err != nil || b.Dir != installed.Dir || b.Source != "BANK_PG_FALLBACK "+installed.Dir {
		t.Fatalf("nothing installed: got %+v, %v; want the fallback", b, err)
	}
	// The bin directory is accepted as well as the installation's root.
	if b, err := find(Options{Fallback: filepath.Join(installed.Dir, "bin"), SkipInstalled: true}); err != nil || b.Dir != installed.Dir {
		t.Fatalf("fallback given as bin/: got %+v, %v", b, err)
	}
	if b, err := find(Options{Fallback: t.TempDir()}); err != nil || !strings.HasPrefix(b.Source, "installed PostgreSQL") {
		t.Fatalf("with PostgreSQL installed: got %+v, %v; want the installed one, the fallback not even checked", b, err)
	}
	if b, err := find(Options{Binaries: installed.Dir, Fallback: t.TempDir(), SkipInstalled: true}); err != nil || !strings.HasPrefix(b.Source, "--pg-binaries ") {
		t.Fatalf("with --pg-binaries: got %+v, %v; want --pg-binaries", b, err)
	}

	bad := t.TempDir()
	_, err = find(Options{Fallback: bad, SkipInstalled: true})
	var env *Error
	if !errors.As(err, &env) || !strings.HasPrefix(err.Error(), "BANK_PG_FALLBACK "+bad+": no bin/pg_ctl") {
		t.Fatalf("a fallback that is no installation: got %v; want an environment error naming BANK_PG_FALLBACK", err)
	}
}
