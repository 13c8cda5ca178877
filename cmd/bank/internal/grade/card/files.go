package card

import (
	"io"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/cmd/bank/internal/htmlpage"
	"github.com/zudojs/bank/cmd/bank/internal/outfile"
)

// Files are what a grade writes beside its card: --junit and --html. They
// are made before any check runs, so that a path that cannot be written is
// said at once, and each replaces its file only once it is whole.
type Files struct {
	junitPath string
	junit     *outfile.File
	page      *htmlpage.Page
	out       io.Writer // standard output, for --junit - and --html -
}

// OpenFiles checks the paths of --junit and --html (each "" for none, "-"
// for standard output, *out) against --json, and makes the files. With
// --html -, *out becomes io.Discard: the page is the output. Discard
// undoes what was made, once the grade is over.
func OpenFiles(junitPath, htmlPath string, asJSON bool, out *io.Writer) (*Files, error) {
	switch {
	case htmlPath == "-" && asJSON:
		return nil, exitcode.Usagef("--html - and --json both write to standard output: give --html a file, such as grade.html")
	case junitPath == "-" && (asJSON || htmlPath == "-"):
		return nil, exitcode.Usagef("--junit - writes to standard output, as --json and --html - do: give --junit a file, such as grade.xml")
	}
	f := &Files{junitPath: junitPath, out: *out}
	if junitPath != "" && junitPath != "-" {
		var err error
		if f.junit, err = outfile.Create(junitPath, ".bank-junit-*.xml"); err != nil {
			return nil, htmlpage.PathError("--junit", "grade.xml", err)
		}
	}
	page, err := htmlpage.Start(htmlPath, "grade.html", out)
	if err != nil {
		f.Discard()
		return nil, err
	}
	f.page = page
	return f, nil
}

// Discard removes what was not written whole.
func (f *Files) Discard() {
	if f.junit != nil {
		f.junit.Discard()
	}
	f.page.Discard()
}

// Write writes rep, the report card of g, to the page and as JUnit XML,
// each where it was asked for; took is the whole grade's time.
func (f *Files) Write(rep grade.Report, g Graded, took time.Duration) error {
	if err := f.page.WriteWith(func(w io.Writer) error { return Page(w, rep, g) }); err != nil {
		return err
	}
	switch {
	case f.junitPath == "-":
		return JUnit(f.out, rep, g, took)
	case f.junit != nil:
		if err := JUnit(f.junit, rep, g, took); err != nil {
			return err
		}
		if err := f.junit.Commit(); err != nil {
			return htmlpage.PathError("--junit", "grade.xml", err)
		}
	}
	return nil
}

// CardShown reports whether the card is printed: not when --junit -
// took standard output.
func (f *Files) CardShown() bool { return f.junitPath != "-" }
