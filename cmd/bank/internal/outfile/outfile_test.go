package outfile

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// entries lists the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestCommitPutsTheWholeFileInPlace: nothing is at the path until Commit
// (on Linux, nothing at all in the directory, so a SIGKILL leaves no
// trace), then the whole file is there, readable by all, and nothing else.
func TestCommitPutsTheWholeFileInPlace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "page.html")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path, ".bank-page-*.html")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("new page")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Errorf("before Commit the path holds %q, want the old file", got)
	}
	if runtime.GOOS == "linux" {
		if names := entries(t, dir); len(names) != 1 {
			t.Errorf("before Commit the directory holds %v, want page.html alone (the new file has no name yet)", names)
		}
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	f.Discard() // after Commit, nothing to do
	if got, _ := os.ReadFile(path); string(got) != "new page" {
		t.Errorf("after Commit the path holds %q", got)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("after Commit: %v, mode %v, want 0644", err, st.Mode())
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("after Commit the directory holds %v, want page.html alone", names)
	}
}

func TestDiscardLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	f, err := Create(filepath.Join(dir, "history.jsonl"), ".bank-history-*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("half a line"))
	f.Discard()
	if names := entries(t, dir); len(names) != 0 {
		t.Errorf("after Discard the directory holds %v", names)
	}
}

func TestRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	refused := map[string]string{dir: "a directory"}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(dir, "target"), link); err == nil { // Windows may not let us
		refused[link] = "a symbolic link (bank never writes through one)"
	}
	for path, what := range refused {
		_, err := Create(path, ".x-*")
		if nf, ok := err.(*NotAFile); !ok || nf.What != what {
			t.Errorf("Create(%s): %v, want it refused as %s", path, err, what)
		}
	}
	if names := entries(t, dir); len(names) != len(refused)-1 {
		t.Errorf("the directory holds %v, want the link alone", names)
	}
}
