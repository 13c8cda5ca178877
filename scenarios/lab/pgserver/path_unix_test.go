//go:build unix

package pgserver

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestPathOrderChoosesTheInstallation: a pg_ctl first on PATH is chosen
// over a pg_config further on, and the other way round; a pg_ctl is
// taken at its real directory, through a link.
func TestPathOrderChoosesTheInstallation(t *testing.T) {
	real := filepath.Join(t.TempDir(), "pg18", "bin")
	withCtl, withConfig := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "pg_ctl"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(real, "pg_ctl"), filepath.Join(withCtl, "pg_ctl")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(withConfig, "pg_config"), []byte("#!/bin/sh\necho /usr/lib/postgresql/15/bin\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	realDir, _ := filepath.EvalSymlinks(real)
	for _, c := range []struct {
		path string
		want []string
	}{
		{withCtl + string(os.PathListSeparator) + withConfig, []string{realDir, "/usr/lib/postgresql/15/bin"}},
		{withConfig + string(os.PathListSeparator) + withCtl, []string{"/usr/lib/postgresql/15/bin", realDir}},
	} {
		t.Setenv("PATH", c.path+string(os.PathListSeparator)+"/bin:/usr/bin")
		got := onPath()
		if len(got) < 2 || !slices.Equal(got[:2], c.want) {
			t.Errorf("PATH=%s: the installations in order are %v, want %v first", c.path, got, c.want)
		}
	}
}
