package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/zudojs/bank/scenarios"
)

// page is an --html file being made: the runs are recorded as they go,
// and the page replaces the file only once it is whole.
type page struct {
	path string
	tmp  *os.File
	recs []*scenarios.Recording
}

// startPage prepares --html FILE (nothing when path is ""): it checks
// now, before any run, that the file can be written, by making the
// temporary file it will become.
func (a *app) startPage(path string, o *scenarios.Options) (*page, error) {
	if path == "" {
		return nil, nil
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, usagef("--html %s is a directory: name a file, such as crash.html", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".bank-page-*.html")
	if err != nil {
		return nil, usagef("--html: cannot write in %s: %v", filepath.Dir(path), errReason(err))
	}
	p := &page{path: path, tmp: tmp}
	o.Record = func(r *scenarios.Recording) { p.recs = append(p.recs, r) }
	return p, nil
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
	if err := scenarios.WriteHTML(p.tmp, p.recs); err != nil {
		return err
	}
	if err := p.tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := p.tmp.Close(); err != nil {
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
