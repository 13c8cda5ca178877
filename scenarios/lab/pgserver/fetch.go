package pgserver

import (
	"context"
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

	"github.com/zudojs/bank/scenarios/lab/pgserver/download"
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
		if err := downloadArchive(ctx, download.Client(o.Progress, o.ProgressBar), repo, libraryVersion(major), archive); err != nil {
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

// downloadArchive fetches the jar of PostgreSQL v from the repository as
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
func downloadArchive(ctx context.Context, client *http.Client, repo string, v embeddedpostgres.PostgresVersion, archive string) error {
	osName, arch := runtime.GOOS, libraryArch(v)
	jarURL := fmt.Sprintf("%s/io/zonky/test/postgres/embedded-postgres-binaries-%s-%s/%s/embedded-postgres-binaries-%s-%s-%s.jar",
		strings.TrimRight(repo, "/"), osName, arch, v, osName, arch, v)
	return download.Jar(ctx, client, jarURL, archive)
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
