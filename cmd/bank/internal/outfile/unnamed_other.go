//go:build !linux

package outfile

import (
	"errors"
	"os"
)

// createUnnamed: files with no name are Linux's; elsewhere a named
// temporary file is made.
func createUnnamed(dir string) *os.File { return nil }

func nameUnnamed(f *os.File, dir, pattern string) (string, error) {
	return "", errors.New("outfile: no unnamed files here")
}
