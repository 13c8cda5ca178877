package term

import (
	"os"

	"golang.org/x/sys/windows"
)

// Width is the columns of the console v is, or 0 when it is not
// one.
func Width(v any) int {
	f, ok := v.(*os.File)
	if !ok {
		return 0
	}
	var info windows.ConsoleScreenBufferInfo
	if windows.GetConsoleScreenBufferInfo(windows.Handle(f.Fd()), &info) != nil {
		return 0
	}
	return int(info.Window.Right - info.Window.Left + 1)
}
