// Package term tells whether the lab's streams are a terminal, and how
// wide one is: what decides colour, progress bars, prompts and the width
// of a transcript.
package term

import (
	"os"

	"github.com/mattn/go-isatty"
)

// IsTerminal reports whether v is a terminal (a Cygwin one too).
func IsTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
