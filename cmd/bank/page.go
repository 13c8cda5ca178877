package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/zudojs/bank/scenarios/render"
)

// page is an --html file being made: the runs are recorded as they go,
// and the page replaces the file only once it is whole.
type page struct {
	path   string
	tmp    *os.File
	stdout io.Writer        // --html -: the page is the output
	rec    *render.Recorder // the runs, as they go
}

// startPage prepares --html FILE (nothing when path is ""): it checks
// now, before any run, that the file can be written, by making the
// temporary file it will become. It writes only to a new file or over a
// regular one: never through a link, never over a device, a FIFO or a
// directory. "-" is standard output, and then the page is the only output
// (the transcript is not printed beside it).
func (a *app) startPage(path string) (*page, error) {
	if path == "" {
		return nil, nil
	}
	var p *page
	if path == "-" {
		p = &page{path: path, stdout: a.io.Out, rec: &render.Recorder{}}
		a.io.Out = io.Discard
	} else {
		if err := writableFile(path); err != nil {
			return nil, err
		}
		tmp, err := os.CreateTemp(filepath.Dir(path), ".bank-page-*.html")
		if err != nil {
			return nil, usagef("--html: cannot write in %s: %v", filepath.Dir(path), errReason(err))
		}
		p = &page{path: path, tmp: tmp, rec: &render.Recorder{}}
	}
	return p, nil
}

// writableFile refuses a path that is there and is not a regular file.
func writableFile(path string) error {
	st, err := os.Lstat(path)
	if err != nil {
		return nil // a new file (a missing directory fails when the page is made)
	}
	what := ""
	switch m := st.Mode(); {
	case m.IsRegular():
		return nil
	case m.IsDir():
		what = "a directory"
	case m&os.ModeSymlink != 0:
		what = "a symbolic link (bank never writes through one)"
	case m&os.ModeNamedPipe != 0:
		what = "a FIFO"
	case m&os.ModeDevice != 0 || m&os.ModeCharDevice != 0:
		what = "a device"
	case m&os.ModeSocket != 0:
		what = "a socket"
	default:
		what = "not a regular file"
	}
	return usagef("--html %s is %s: name a new file or a regular one, such as crash.html, or - for standard output", path, what)
}

func errReason(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// write finishes the page and puts it in place.
func (p *page) write() error {
	if p == nil {
		return nil
	}
	if p.stdout != nil {
		return render.WriteHTML(p.stdout, p.rec.Runs)
	}
	if err := render.WriteHTML(p.tmp, p.rec.Runs); err != nil {
		return err
	}
	if err := p.tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := p.tmp.Sync(); err != nil {
		return err
	}
	if err := p.tmp.Close(); err != nil {
		return err
	}
	// Once more, just before: the path may have changed during the run.
	if err := writableFile(p.path); err != nil {
		return err
	}
	if err := os.Rename(p.tmp.Name(), p.path); err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	p.tmp = nil
	return nil
}

// discard removes the temporary file of a page that was not finished.
func (p *page) discard() {
	if p != nil && p.tmp != nil {
		p.tmp.Close()
		os.Remove(p.tmp.Name())
	}
}
