package pgserver

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// tree makes a directory tree like a slot's: nested folders, many files,
// an empty folder, a read-only file, and links (where the system lets the
// test make one) to a folder and a file outside it, which must survive.
// It returns the outside folder.
func tree(t *testing.T, dir string) (outside string) {
	t.Helper()
	outside = filepath.Join(scratch(t), "outside")
	must(t, os.MkdirAll(filepath.Join(outside, "keep"), 0o700))
	must(t, os.WriteFile(filepath.Join(outside, "keep", "file"), []byte("keep"), 0o600))
	for _, d := range []string{"data/base/1", "data/base/5", "data/pg_wal/archive_status", "data/empty"} {
		must(t, os.MkdirAll(filepath.Join(dir, d), 0o700))
	}
	for i := range 40 {
		must(t, os.WriteFile(filepath.Join(dir, "data", "base", strconv.Itoa(1+4*(i%2)), strconv.Itoa(1000+i)), []byte("page"), 0o600))
	}
	must(t, os.WriteFile(filepath.Join(dir, "data", "PG_VERSION"), []byte("15\n"), 0o400)) // read-only
	if err := os.Symlink(filepath.Join(outside, "keep"), filepath.Join(dir, "data", "link-to-dir")); err != nil {
		t.Logf("no link to a folder (%v): the removal is tested without it", err)
	}
	if err := os.Symlink(filepath.Join(outside, "keep", "file"), filepath.Join(dir, "data", "base", "1", "link-to-file")); err != nil {
		t.Logf("no link to a file (%v): the removal is tested without it", err)
	}
	return outside
}

// scratch is a temporary directory removed with removeTree: t.TempDir's
// own removal is os.RemoveAll, which fails under wine.
func scratch(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "bank-remove-")
	must(t, err)
	t.Cleanup(func() {
		if err := removeTree(dir); err != nil {
			t.Error(err)
		}
	})
	return dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func gone(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("%s is still there (%v)", path, err)
	}
}

func kept(t *testing.T, outside string) {
	t.Helper()
	if raw, err := os.ReadFile(filepath.Join(outside, "keep", "file")); err != nil || string(raw) != "keep" {
		t.Errorf("a file a link pointed at was touched: %q, %v", raw, err)
	}
}

// TestRemoveTree: a whole cluster-like tree goes, links and all, and
// what the links point at stays. Under wine (.ci/windows runs this test)
// Go's os.RemoveAll failed on the first file ("unlinkat …: Invalid
// function."), and every run after a slot was refilled failed with it.
func TestRemoveTree(t *testing.T) {
	dir := filepath.Join(scratch(t), "0")
	outside := tree(t, dir)
	if err := removeTree(dir); err != nil {
		t.Fatal(err)
	}
	gone(t, dir)
	kept(t, outside)
	if err := removeTree(dir); err != nil {
		t.Errorf("removing what is not there: %v", err)
	}
}

// TestClearDir: clearing a slot's folder frees its name for a fresh copy
// and leaves nothing beside it, also when a file in it is still open (on
// Windows a postgres.exe of an earlier run may hold one for a moment);
// what could not go then goes with the next clearing.
func TestClearDir(t *testing.T) {
	slots := scratch(t)
	dir := filepath.Join(slots, "0")
	outside := tree(t, dir)
	open := holdOpen(t, filepath.Join(dir, "data", "base", "1", "1000"))
	err := clearDir(dir)
	open.Close()
	if err != nil {
		t.Fatalf("with a file open in it: %v", err)
	}
	gone(t, dir)
	must(t, os.Mkdir(dir, 0o700)) // the fresh copy's place
	tree(t, filepath.Join(dir, "again"))
	if err := clearDir(dir); err != nil {
		t.Fatal(err)
	}
	gone(t, dir)
	kept(t, outside)
	left, _ := os.ReadDir(slots)
	for _, e := range left {
		t.Errorf("left beside the slot: %s", e.Name())
	}
	if err := clearDir(dir); err != nil {
		t.Errorf("clearing what is not there: %v", err)
	}
}
