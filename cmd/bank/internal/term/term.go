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
	"sync"

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

// Lines reads an input a line at a time on a goroutine of its own, so
// that whoever waits for a line (a prompt) stops waiting as soon as its
// context ends, at Ctrl-C, instead of sitting in a read that only a line
// can end. The goroutine starts at the first Next; one Lines per input,
// used by one caller at a time (a second reader would take its lines).
type Lines struct {
	in    *bufio.Reader
	start sync.Once
	ch    chan line
	err   error // the read's error, once there was one
}

type line struct {
	s   string
	err error
}

// NewLines reads in a line at a time.
func NewLines(in io.Reader) *Lines { return &Lines{in: bufio.NewReader(in)} }

// Next is the next line, its newline included, or what was read before
// the input ended with the input's error; or, when ctx ends first, ctx's
// error. After an error it returns that error again.
func (l *Lines) Next(ctx context.Context) (string, error) {
	l.start.Do(func() {
		l.ch = make(chan line)
		go func() {
			for {
				s, err := l.in.ReadString('\n')
				l.ch <- line{s, err}
				if err != nil {
					return
				}
			}
		}()
	})
	if l.err != nil {
		return "", l.err
	}
	select {
	case r := <-l.ch:
		l.err = r.err
		return r.s, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// EnterPrompt returns a pause that says prompt (with the next step's name
// for %s) and waits for Enter on in, or for ctx to end (Ctrl-C at the
// prompt ends the run at once instead of waiting for a line).
func EnterPrompt(ctx context.Context, in *Lines, out io.Writer, prompt string) func(next string) {
	return func(next string) {
		fmt.Fprintf(out, prompt, next)
		if _, err := in.Next(ctx); err != nil && ctx.Err() != nil {
			fmt.Fprintln(out)
		}
	}
}
