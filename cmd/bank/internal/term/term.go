// Package term tells whether the lab's streams are a terminal, and how
// wide one is: what decides colour, progress bars, prompts and the width
// of a transcript.
package term

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/mattn/go-isatty"
	"golang.org/x/term"
)

// IsTerminal reports whether v is a terminal (a Cygwin one too).
func IsTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// Width is the columns of the terminal v is, or 0 when it is not one (or
// does not say): a console's window on Windows, the kernel's window size
// on Unix.
func Width(v any) int {
	f, ok := v.(*os.File)
	if !ok {
		return 0
	}
	w, _, err := term.GetSize(int(f.Fd()))
	if err != nil || w < 0 {
		return 0
	}
	return w
}

// EnterPrompt returns a pause that says prompt (with the next step's name
// for %s) and waits for Enter on in, or for ctx to end. Enter is read on
// a goroutine of its own, so that Ctrl-C at the prompt ends the run at
// once instead of waiting for a line.
func EnterPrompt(ctx context.Context, in io.Reader, out io.Writer, prompt string) func(next string) {
	lines := bufio.NewReader(in)
	enter := make(chan struct{})
	go func() {
		defer close(enter)
		for {
			if _, err := lines.ReadString('\n'); err != nil {
				return
			}
			enter <- struct{}{}
		}
	}()
	return func(next string) {
		fmt.Fprintf(out, prompt, next)
		select {
		case <-enter:
		case <-ctx.Done():
			fmt.Fprintln(out)
		}
	}
}
