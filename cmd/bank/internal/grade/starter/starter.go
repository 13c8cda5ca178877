// Package starter holds the servers a learner may start the grader's
// lesson from, one per language, and writes one into a folder (bank grade
// --starter LANG DIR). Each is the lesson's transfer API written from
// bank grade --contract alone, in its language's plain idiom with one
// database driver: a correct transfer in one transaction, and no
// idempotency at all, with comments marked YOUR WORK where the lesson's
// keys go. A first grade passes plain and fails the idempotency checks.
//
// The files live in _files/LANG (a folder the go tool leaves alone, so
// that the Go starter is not a package of this module). go:embed takes no
// folder that holds a go.mod, so the Go starter's go.mod and go.sum are
// kept as go.mod.txt and go.sum.txt and get their names back on writing.
package starter

import (
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/names"
)

//go:embed all:_files
var files embed.FS

// A Kit is a set of starters, one folder per language under Root in FS:
// the servers here (Servers), the clients of bank grade client.
type Kit struct {
	FS   fs.FS
	Root string
	What string // what a starter is, for the announcement ("client"; "" for the servers)
	// Next is, per language, the command that grades its starter, run in
	// its folder, and what to have first.
	Next map[string][2]string
	// Passes says, after the command, what a first grade shows.
	Passes string
}

// Servers are bank grade's starters.
var Servers = Kit{FS: files, Root: "_files", Next: nextSteps,
	Passes: "It passes plain and fails the idempotency checks: your work is marked YOUR WORK\nin the code, and its README.md says more."}

// renamed are the names a file is kept under, and the name it is written as.
var renamed = map[string]string{"go.mod.txt": "go.mod", "go.sum.txt": "go.sum"}

// Languages are the servers' starters, in order: go, node, python.
func Languages() []string { return Servers.Languages() }

// Write writes the server starter in lang into dir (Kit.Write).
func Write(lang, dir string) ([]string, error) { return Servers.Write(lang, dir) }

// Announce tells what Write wrote (Kit.Announce).
func Announce(w io.Writer, lang, dir string, files []string) { Servers.Announce(w, lang, dir, files) }

// Languages are the kit's starters, in order of their names.
func (k Kit) Languages() []string {
	entries, _ := fs.ReadDir(k.FS, k.Root) // sorted by name
	var langs []string
	for _, e := range entries {
		if e.IsDir() {
			langs = append(langs, e.Name())
		}
	}
	return langs
}

// file is one file of a starter: where it is kept, and its name in DIR.
type file struct{ src, name string }

// starterFiles lists lang's files, in order.
func (k Kit) starterFiles(lang string) ([]file, error) {
	if !slices.Contains(k.Languages(), lang) {
		return nil, fmt.Errorf("no starter in %q: the languages are %s", lang, strings.Join(k.Languages(), ", "))
	}
	root := path.Join(k.Root, lang)
	var list []file
	err := fs.WalkDir(k.FS, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := strings.TrimPrefix(p, root+"/")
		if to, ok := renamed[path.Base(name)]; ok {
			name = path.Join(path.Dir(name), to)
		}
		list = append(list, file{p, name})
		return nil
	})
	return list, err
}

// Write writes the starter in lang (one of Languages) into dir, making
// dir if it is missing, and returns the paths it wrote (dir joined with
// each file's name). It writes over nothing: if any of its files is
// already there, as a file, a folder or a link (even a broken one), it
// writes none of them, and the error names each one (errors.Is
// fs.ErrExist). Files are made 0644 and folders 0755, less the umask;
// each is created new (O_EXCL), so a link put in its place meanwhile is
// never followed. If a write fails half-way, the files written so far are
// removed.
func (k Kit) Write(lang, dir string) ([]string, error) {
	if dir == "" {
		return nil, errors.New("no folder to write the starter in")
	}
	list, err := k.starterFiles(lang)
	if err != nil {
		return nil, err
	}
	var there []string
	for _, f := range list {
		target := filepath.Join(dir, filepath.FromSlash(f.name))
		_, err := os.Lstat(target)
		switch {
		case err == nil:
			there = append(there, target)
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("cannot write the %s starter in %s: %w", lang, dir, err)
		}
	}
	if len(there) > 0 {
		return nil, &ExistsError{Paths: there, Lang: lang}
	}
	var written []string
	for _, f := range list {
		target := filepath.Join(dir, filepath.FromSlash(f.name))
		if err := k.writeNew(f.src, target); err != nil {
			for _, w := range written {
				os.Remove(w)
			}
			return nil, err
		}
		written = append(written, target)
	}
	return written, nil
}

// writeNew writes the kept file src to target, which must not exist yet.
func (k Kit) writeNew(src, target string) error {
	content, err := fs.ReadFile(k.FS, src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := out.Write(content); err != nil {
		out.Close()
		os.Remove(target)
		return err
	}
	if err := out.Close(); err != nil {
		os.Remove(target)
		return err
	}
	return nil
}

// ExistsError is Write's refusal: paths were already there, so nothing
// was written. It matches fs.ErrExist.
type ExistsError struct {
	Paths []string
	Lang  string
}

func (e *ExistsError) Error() string {
	return fmt.Sprintf("%s already there: the %s starter writes over nothing, so it wrote nothing; choose an empty folder, or move them away",
		strings.Join(e.Paths, ", "), e.Lang)
}

func (e *ExistsError) Is(target error) bool { return target == fs.ErrExist }

// nextSteps is, per language, the command that grades its starter, run in its
// folder, and what to have first.
var nextSteps = map[string][2]string{
	"go":     {"go build -o server . && bank grade -- ./server", "Go 1.25 or newer; go build fetches pgx, its one dependency"},
	"node":   {"npm install && bank grade -- node server.js", "Node.js 18 or newer; npm install fetches pg, its one dependency"},
	"python": {"bank grade -- python3 server.py", `its one dependency first: pip install "psycopg[binary]" (or apt install python3-psycopg)`},
}

// Announce tells the learner what Write wrote into dir, and what to run
// next there.
func (k Kit) Announce(w io.Writer, lang, dir string, files []string) {
	fmt.Fprintf(w, "wrote the %s starter into %s:\n", strings.TrimSpace(lang+" "+k.What), dir)
	for _, f := range files {
		rel, err := filepath.Rel(dir, f)
		if err != nil {
			rel = f
		}
		fmt.Fprintf(w, "  %s\n", rel)
	}
	r := k.Next[lang]
	fmt.Fprintf(w, "\nnext, in %s (%s):\n  %s\n\n%s\n", dir, r[1], r[0], k.Passes)
}

// Run is a command's --starter LANG DIR: lang's starter written into the
// one argument, a folder, and announced on out; dash is where the command
// line's -- was (-1 for none), and grading the command that grades one
// ("bank grade", "bank grade client"). Its errors are exitcode's.
func (k Kit) Run(out io.Writer, lang string, args []string, dash int, grading string) error {
	what := k.What
	if what == "" {
		what = "server"
	}
	switch {
	case dash >= 0:
		return exitcode.Usagef("--starter writes a %s and grades nothing: drop the command after --, then grade the starter from its folder", what)
	case len(args) != 1:
		return exitcode.Usagef("--starter %s needs one folder to write into, such as: %s --starter %s my-%s", lang, grading, lang, what)
	case !slices.Contains(k.Languages(), lang):
		return exitcode.Usagef("no starter in %q%s; choose one of %s", lang, names.DidYouMean(lang, k.Languages()), strings.Join(k.Languages(), ", "))
	}
	files, err := k.Write(lang, args[0])
	if errors.Is(err, fs.ErrExist) {
		return exitcode.Usagef("%v", err)
	}
	if err != nil {
		return exitcode.Envf("writing the %s starter: %v", lang, err)
	}
	k.Announce(out, lang, args[0], files)
	return nil
}
