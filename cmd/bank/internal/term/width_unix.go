//go:build unix

package term

import (
	"os"

	"golang.org/x/sys/unix"
)

// Width is the columns of the terminal v is, or 0 when it is not
// one (or does not say).
func Width(v any) int {
	f, ok := v.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
