package pgserver

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	embeddedpostgres "github.com/fergusstrange/embedded-postgres"

	"github.com/zudojs/bank/scenarios/lab/procs"
)

// fetch downloads (unless the library's cache has it) the archive
// embedded-postgres would, with a client of its own (see download), and
// has the library unpack it into the bank cache. The library only unpacks
// as a step of its Start, so fetch runs Start against a stand-in data
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
	defer removeTree(scratch)
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
	repo := o.RepositoryURL
	if repo == "" {
		repo = defaultRepository
	}
	cfg := embeddedpostgres.DefaultConfig().
		Version(libraryVersion(major)).
		Port(uint32(port)).
		CachePath(libCache).
		BinariesPath(b.Dir).
		RuntimePath(filepath.Join(scratch, "runtime")).
		DataPath(fake).
		Logger(io.Discard).
		StartTimeout(5 * time.Second).
		BinaryRepositoryURL(repo)
	archive := filepath.Join(libCache, archiveName(libraryVersion(major)))
	if _, err := os.Stat(archive); err != nil {
		say(fmt.Sprintf("downloading PostgreSQL %s (first run only; tens of MB)", libraryVersion(major)))
		if err := download(ctx, downloadClient(o.Progress, o.ProgressBar), repo, libraryVersion(major), archive); err != nil {
			return Binaries{}, err
		}
	}
	// The archive is in the library's cache, so its Start only unpacks it
	// (and fails to start a server, by design). Unpacking a local file
	// cannot be told to stop: on Ctrl-C it is left to finish alone.
	pg := embeddedpostgres.NewDatabase(cfg)
	done := make(chan error, 1)
	go func() { done <- pg.Start() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		return Binaries{}, ctx.Err()
	}
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

// defaultRepository is embedded-postgres's own default: Maven Central,
// where zonky's embedded-postgres-binaries are published.
const defaultRepository = "https://repo1.maven.org/maven2"

// archiveName is the file embedded-postgres looks for in its cache before
// it downloads anything: embedded-postgres-binaries-OS-ARCH-VERSION.txz.
func archiveName(v embeddedpostgres.PostgresVersion) string {
	return fmt.Sprintf("embedded-postgres-binaries-%s-%s-%s.txz", runtime.GOOS, libraryArch(v), v)
}

// download fetches the jar of PostgreSQL v from the repository as
// embedded-postgres would (the same address; checked against its .sha256
// when the repository has one, as the library does), with client, and
// leaves the .txz the jar holds at archive, written to a temporary file
// and renamed, so that the library finds it and downloads nothing itself.
//
// The library fetches with http.Get: no context reaches it, so a
// cancelled download would go on behind its caller, and the only way to
// watch it is to change http.DefaultClient, which every other request in
// the process reads. Here ctx stops the download, and what watches it is
// this download's own client.
func download(ctx context.Context, client *http.Client, repo string, v embeddedpostgres.PostgresVersion, archive string) error {
	osName, arch := runtime.GOOS, libraryArch(v)
	jarURL := fmt.Sprintf("%s/io/zonky/test/postgres/embedded-postgres-binaries-%s-%s/%s/embedded-postgres-binaries-%s-%s-%s.jar",
		strings.TrimRight(repo, "/"), osName, arch, v, osName, arch, v)
	dir := filepath.Dir(archive)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	jar, err := os.CreateTemp(dir, ".download-*.jar")
	if err != nil {
		return err
	}
	defer os.Remove(jar.Name())
	defer jar.Close()
	sum := sha256.New()
	if err := get(ctx, client, jarURL, io.MultiWriter(jar, sum), maxArchive); err != nil {
		return fmt.Errorf("downloading %s: %w", jarURL, err)
	}
	var want bytes.Buffer
	err = get(ctx, client, jarURL+".sha256", &want, 1<<10)
	var status statusError
	switch {
	case errors.As(err, &status):
		// No checksum published: the library goes on without one too.
	case err != nil:
		return fmt.Errorf("downloading the checksum: %w", err)
	case strings.TrimSpace(want.String()) != hex.EncodeToString(sum.Sum(nil)):
		return errors.New("the downloaded archive does not match its checksum")
	}
	return extractTxz(jar, archive)
}

// maxArchive bounds a download: PostgreSQL's jars are 10-40 MB.
const maxArchive = 512 << 20

type statusError int

func (e statusError) Error() string { return fmt.Sprintf("the repository answered %d", int(e)) }

// get copies the body of a GET of url to w, up to limit bytes.
func get(ctx context.Context, client *http.Client, url string, w io.Writer, limit int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return statusError(resp.StatusCode)
	}
	n, err := io.Copy(w, io.LimitReader(resp.Body, limit+1))
	if err == nil && n > limit {
		err = fmt.Errorf("the answer is larger than %d bytes", limit)
	}
	return err
}

// extractTxz writes the .txz the jar holds to archive.
func extractTxz(jar *os.File, archive string) error {
	info, err := jar.Stat()
	if err != nil {
		return err
	}
	zr, err := zip.NewReader(jar, info.Size())
	if err != nil {
		return fmt.Errorf("reading the downloaded archive: %w", err)
	}
	for _, f := range zr.File {
		if f.FileInfo().IsDir() || !strings.HasSuffix(f.Name, ".txz") {
			continue
		}
		r, err := f.Open()
		if err != nil {
			return fmt.Errorf("reading the downloaded archive: %w", err)
		}
		defer r.Close()
		tmp, err := os.CreateTemp(filepath.Dir(archive), ".download-*.txz")
		if err != nil {
			return err
		}
		_, err = io.Copy(tmp, r)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), archive)
		}
		if err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("unpacking the downloaded archive: %w", err)
		}
		return nil
	}
	return errors.New("the downloaded archive holds no .txz")
}

// downloadClient is the download's own client: http.DefaultTransport's
// connections (and its proxy settings), behind a transport that counts
// the bytes of each response body and reports them to w, when w is set.
// Nothing process-wide changes.
func downloadClient(w io.Writer, bar bool) *http.Client {
	if w == nil {
		return &http.Client{}
	}
	return &http.Client{Transport: countingTransport{base: http.DefaultTransport, w: w, bar: bar}}
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

// countingTransport reports the bytes of each large response body as
// they come: a bar redrawn in place on a terminal, a line every few
// seconds in a pipe.
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
