// Package htmlpage is the web page of --html (bank scenario, bank
// mistake and bank grade): the runs are recorded as they go, and the
// page is written only once it is whole, through package outfile, or to
// standard output for --html -. A path that cannot be written is a usage
// error (exit 2, package exitcode).
package htmlpage

import (
	"errors"
	"fmt"
	"io"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/outfile"
	"github.com/zudojs/bank/scenarios/lab/render"
)

// Page is an --html file being made: the runs are recorded as they go,
// and the page replaces the file only once it is whole.
type Page struct {
	file    *outfile.File
	stdout  io.Writer        // --html -: the page is the output
	Rec     *render.Recorder // the runs, as they go
	example string           // a file name that would do, for an error
}

// Start prepares --html FILE (nothing when path is ""): it checks
// now, before any run, that the file can be written, by making the
// temporary file it will become (package outfile: never through a link,
// never over a device, a FIFO or a directory). "-" is standard output,
// *out, and then the page is the only output (the transcript is not
// printed beside it: *out becomes io.Discard). example is a name that
// would do, said when the path will not (crash.html, grade.html).
func Start(path, example string, out *io.Writer) (*Page, error) {
	switch path {
	case "":
		return nil, nil
	case "-":
		p := &Page{stdout: *out, Rec: &render.Recorder{}}
		*out = io.Discard
		return p, nil
	}
	f, err := outfile.Create(path, ".bank-page-*.html")
	if err != nil {
		return nil, PathError("--html", example, err)
	}
	return &Page{file: f, Rec: &render.Recorder{}, example: example}, nil
}

// PathError says what was wrong with the path a flag names for a file the
// lab writes (package outfile), as a usage error where it is the path's
// fault: example is a name that would do.
func PathError(flag, example string, err error) error {
	var bad *outfile.NotAFile
	var room *outfile.NoRoom
	switch {
	case errors.As(err, &bad):
		return exitcode.Usagef("%s %s is %s: name a new file or a regular one, such as %s, or - for standard output", flag, bad.Path, bad.What, example)
	case errors.As(err, &room):
		return exitcode.Usagef("%s: %v", flag, room)
	}
	return fmt.Errorf("%s: %w", flag, err)
}

// Write finishes the page of the recorded runs and puts it in place.
func (p *Page) Write() error {
	return p.WriteWith(func(w io.Writer) error { return render.WriteHTML(w, p.Rec.Runs) })
}

// WriteWith finishes the page with write, which writes the whole page
// (bank grade's report card, say), and puts it in place.
func (p *Page) WriteWith(write func(io.Writer) error) error {
	switch {
	case p == nil:
		return nil
	case p.stdout != nil:
		return write(p.stdout)
	}
	if err := write(p.file); err != nil {
		return err
	}
	if err := p.file.Commit(); err != nil {
		return PathError("--html", p.example, err)
	}
	return nil
}

// Discard removes the temporary file of a page that was not finished.
func (p *Page) Discard() {
	if p != nil {
		p.file.Discard()
	}
}
