package pgserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	embeddedpostgres "github.com/fergusstrange/embedded-postgres"

	"github.com/zudojs/bank/bank/procs"
)

// fetch has embedded-postgres download (unless its cache has the archive)
// and unpack a PostgreSQL into the bank cache. The library only unpacks as
// a step of its Start, so fetch runs Start against a stand-in data
// directory whose PG_VERSION makes the library skip its own initdb; the
// server start that follows fails by design (not a cluster, or refused as
// root), and only the unpacked binaries matter.
func fetch(ctx context.Context, o Options, libCache, cache string, major int, say func(string)) (Binaries, error) {
	b := Binaries{
		Dir:    filepath.Join(cache, "binaries", string(libraryVersion(major))),
		Major:  major,
		Source: fmt.Sprintf("PostgreSQL %s fetched by embedded-postgres", libraryVersion(major)),
	}
	if complete(b) {
		return b, nil
	}
	if err := ensureDir(filepath.Join(cache, "binaries"), 0o755); err != nil {
		return Binaries{}, err
	}
	scratch, err := os.MkdirTemp(cache, "fetch-")
	if err != nil {
		return Binaries{}, err
	}
	defer os.RemoveAll(scratch)
	fake := filepath.Join(scratch, "data")
	if err := os.MkdirAll(fake, 0o700); err != nil {
		return Binaries{}, err
	}
	if err := os.WriteFile(filepath.Join(fake, "PG_VERSION"), []byte(strconv.Itoa(major)+"\n"), 0o600); err != nil {
		return Binaries{}, err
	}
	port, err := procs.FreePort()
	if err != nil {
		return Binaries{}, err
	}
	cfg := embeddedpostgres.DefaultConfig().
		Version(libraryVersion(major)).
		Port(uint32(port)).
		CachePath(libCache).
		BinariesPath(b.Dir).
		RuntimePath(filepath.Join(scratch, "runtime")).
		DataPath(fake).
		Logger(io.Discard).
		StartTimeout(5 * time.Second)
	if o.RepositoryURL != "" {
		cfg = cfg.BinaryRepositoryURL(o.RepositoryURL)
	}
	if cachedArchiveMajor(libCache) != major {
		say(fmt.Sprintf("downloading PostgreSQL %s (first run only; tens of MB)", libraryVersion(major)))
	}
	restore := watchDownloads(o.Progress, o.ProgressBar)
	pg := embeddedpostgres.NewDatabase(cfg)
	done := make(chan error, 1)
	go func() { done <- pg.Start() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		restore()
		return Binaries{}, ctx.Err()
	}
	restore()
	if err == nil {
		_ = pg.Stop()
	}
	if !complete(b) {
		if err == nil {
			err = errors.New("archive held no bin/pg_ctl")
		}
		return Binaries{}, err
	}
	say("PostgreSQL " + string(libraryVersion(major)) + " is ready in " + b.Dir)
	return b, nil
}

// progressLine returns a function that prints one "bank: …" line to w, or
// nothing when w is nil.
func progressLine(w io.Writer) func(string) {
	return func(msg string) {
		if w != nil {
			fmt.Fprintln(w, "bank: "+msg)
		}
	}
}

// embedded-postgres downloads with http.Get and offers no progress hook.
// While it fetches, watchDownloads puts a transport in front of
// http.DefaultClient that counts the bytes of each response body and
// reports them: a bar redrawn in place on a terminal, a line every few
// seconds in a pipe. It returns the function that puts things back.
var downloadMu sync.Mutex

func watchDownloads(w io.Writer, bar bool) (restore func()) {
	if w == nil {
		return func() {}
	}
	downloadMu.Lock()
	old := http.DefaultClient.Transport
	base := old
	if base == nil {
		base = http.DefaultTransport
	}
	http.DefaultClient.Transport = countingTransport{base: base, w: w, bar: bar}
	return func() {
		http.DefaultClient.Transport = old
		downloadMu.Unlock()
	}
}

type countingTransport struct {
	base http.RoundTripper
	w    io.Writer
	bar  bool
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusOK || (resp.ContentLength >= 0 && resp.ContentLength < 64<<10) {
		return resp, err // checksums and errors are not worth a bar
	}
	resp.Body = &countingBody{ReadCloser: resp.Body, total: resp.ContentLength, w: t.w, bar: t.bar, start: time.Now()}
	return resp, nil
}

type countingBody struct {
	io.ReadCloser
	n, total   int64
	w          io.Writer
	bar        bool
	start      time.Time
	lastReport time.Time
	finished   bool
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n += int64(n)
	every := 5 * time.Second
	if c.bar {
		every = 100 * time.Millisecond
	}
	if now := time.Now(); now.Sub(c.lastReport) >= every || (err != nil && !c.finished) {
		c.lastReport = now
		c.report(err != nil)
	}
	return n, err
}

func (c *countingBody) report(final bool) {
	c.finished = final
	mb := func(n int64) string { return fmt.Sprintf("%.1f", float64(n)/(1<<20)) }
	cr := ""
	if c.bar {
		cr = "\r" // redraw in place
	}
	switch {
	case c.total <= 0 && (!c.bar || final):
		fmt.Fprintf(c.w, "%sbank: downloaded %s MB\n", cr, mb(c.n))
		return
	case c.total <= 0:
		fmt.Fprintf(c.w, "%sbank: downloaded %s MB", cr, mb(c.n))
		return
	case !c.bar:
		fmt.Fprintf(c.w, "bank: downloaded %s of %s MB\n", mb(c.n), mb(c.total))
		return
	}
	const width = 30
	filled := int(int64(width) * c.n / max(c.total, 1))
	line := fmt.Sprintf("\rbank: downloading [%-*s] %s/%s MB", width, strings.Repeat("#", filled), mb(c.n), mb(c.total))
	if final {
		line += "\n"
	}
	fmt.Fprint(c.w, line)
}
