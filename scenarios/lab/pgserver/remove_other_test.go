//go:build !windows

package pgserver

import (
	"os"
	"testing"
)

// holdOpen opens a file, and keeps it open until the caller closes it.
func holdOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	must(t, err)
	return f
}
