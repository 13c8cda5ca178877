package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/zudojs/bank/cmd/bank/internal/outfile"
	"github.com/zudojs/bank/scenarios/render"
)

// page is an --html file being made: the runs are recorded as they go,
// and the page replaces the file only once it is whole.
type page struct {
	file   *outfile.File
	stdout io.Writer        // --html -: the page is the output
	rec    *render.Recorder // the runs, as they go
}

// startPage prepares --html FILE (nothing when path is ""): it checks
// now, before any run, that the file can be written, by making the
// temporary file it will become (package outfile: never through a link,
// never over a device, a FIFO or a directory). "-" is standard output,
// and then the page is the only output (the transcript is not printed
// beside it).
func (a *app) startPage(path string) (*page, error) {
	switch path {
	case "":
		return nil, nil
	case "-":
		p := &page{stdout: a.io.Out, rec: &render.Recorder{}}
		a.io.Out = io.Discard
		return p, nil
	}
	f, err := outfile.Create(path, ".bank-page-*.html")
	if err != nil {
		return nil, htmlError(err)
	}
	return &page{file: f, rec: &render.Recorder{}}, nil
}

// htmlError says what was wrong with --html's path, as a usage error.
func htmlError(err error) error {
	var bad *outfile.NotAFile
	var room *outfile.NoRoom
	switch {
	case errors.As(err, &bad):
		return usagef("--html %s is %s: name a new file or a regular one, such as crash.html, or - for standard output", bad.Path, bad.What)
	case errors.As(err, &room):
		return usagef("--html: %v", room)
	}
	return fmt.Errorf("--html: %w", err)
}

// write finishes the page and puts it in place.
func (p *page) write() error {
	switch {
	case p == nil:
		return nil
	case p.stdout != nil:
		return render.WriteHTML(p.stdout, p.rec.Runs)
	}
	if err := render.WriteHTML(p.file, p.rec.Runs); err != nil {
		return err
	}
	if err := p.file.Commit(); err != nil {
		return htmlError(err)
	}
	return nil
}

// discard removes the temporary file of a page that was not finished.
func (p *page) discard() {
	if p != nil {
		p.file.Discard()
	}
}
