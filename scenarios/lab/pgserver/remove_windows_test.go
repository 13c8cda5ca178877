package pgserver

import (
	"os"
	"testing"

	"golang.org/x/sys/windows"
)

// holdOpen opens a file as PostgreSQL does on Windows (pgwin32_open):
// others may read, write and delete it while it is open.
func holdOpen(t *testing.T, path string) *os.File {
	t.Helper()
	name, err := windows.UTF16PtrFromString(path)
	must(t, err)
	h, err := windows.CreateFile(name, windows.GENERIC_READ, shareAll, nil, windows.OPEN_EXISTING, windows.FILE_ATTRIBUTE_NORMAL, 0)
	must(t, err)
	return os.NewFile(uintptr(h), path)
}
