// Command dist builds bank's release files (make dist, make npm): one
// archive per platform with the bank binary, a short README, the lab's
// licence (LICENSE, MIT) and the licences of the Go modules and the Go
// runtime built into the binary (THIRD_PARTY_LICENSES), a SHA256SUMS
// file, and with -npm the npm packages' tarballs in the shape esbuild
// uses (a launcher, @zudojs/bank, and one package per platform carrying
// the binary), each with the licence too. Run it from the repository's
// top directory.
//
// The same commit gives the same bytes: binaries built with -trimpath,
// an empty build id, no cgo and no VCS stamp (the version and commit go
// in with -X), archives whose entries have fixed times, owners, modes and
// order, gzip without a name or time.
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/zudojs/bank/scenarios/lab/procs"
)

// Platforms are the ones learners use, as GOOS/GOARCH.
var Platforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64"}

const npmSources = "cmd/bank/npm"

func main() {
	out := flag.String("out", "dist", "where the archives go (and the npm tarballs, in its npm/)")
	platforms := flag.String("platforms", strings.Join(Platforms, ","), "GOOS/GOARCH pairs, comma-separated")
	version := flag.String("version", "", "the version (default: cmd/bank/root.go's)")
	commit := flag.String("commit", "", "the commit (default: git's HEAD, -dirty if the tracked files changed)")
	npm := flag.Bool("npm", false, "also write the npm packages' tarballs into OUT/npm")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: go run ./cmd/dist [-out DIR] [-platforms LIST] [-npm]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		fail(2, fmt.Errorf("no arguments expected, got %q", strings.Join(flag.Args(), " ")))
	}
	r, err := newRelease(*out, *platforms, *version, *commit)
	if err != nil {
		fail(2, err)
	}
	if err := r.run(*npm); err != nil {
		fail(1, err)
	}
}

func (r *release) run(npm bool) error {
	defer func() {
		if r.build != "" {
			os.RemoveAll(r.build)
		}
	}()
	if err := r.buildAll(); err != nil {
		return err
	}
	if err := r.archives(); err != nil {
		return err
	}
	if npm {
		return r.npmPackages()
	}
	return nil
}

func fail(code int, err error) {
	fmt.Fprintln(os.Stderr, "dist: "+err.Error())
	os.Exit(code)
}

type release struct {
	out, version, commit string
	epoch                time.Time // every file's time in the archives
	platforms            []platform
	build                string              // the binaries, built once for both archives and packages
	license              []byte              // the lab's licence, LICENSE at the top of the repository
	notices              map[platform][]byte // the licences of what each binary is built from
}

// licenseFile is the lab's licence, and licenseID its SPDX name, which
// every package.json gives as "license".
const (
	licenseFile = "LICENSE"
	licenseID   = "MIT"
	noticesFile = "THIRD_PARTY_LICENSES"
)

type platform struct{ goos, goarch string }

func (p platform) String() string { return p.goos + "/" + p.goarch }
func (p platform) binary() string {
	if p.goos == "windows" {
		return "bank.exe"
	}
	return "bank"
}

// npm's names for the platform (process.platform, process.arch).
func (p platform) npmOS() string {
	if p.goos == "windows" {
		return "win32"
	}
	return p.goos
}
func (p platform) npmCPU() string {
	if p.goarch == "amd64" {
		return "x64"
	}
	return p.goarch
}
func (p platform) archive(version string) string {
	name := fmt.Sprintf("bank-%s-%s-%s", version, p.goos, p.goarch)
	if p.goos == "windows" {
		return name + ".zip"
	}
	return name + ".tar.gz"
}

var semverRE = regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)

func newRelease(out, platforms, version, commit string) (*release, error) {
	if _, err := os.Stat(filepath.Join(npmSources, "launcher", "package.json")); err != nil {
		return nil, fmt.Errorf("run me from the repository's top directory (%v)", err)
	}
	r := &release{out: out, version: version, commit: commit, notices: map[platform][]byte{}}
	var err error
	if r.license, err = readLicense(licenseFile); err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, p := range Platforms {
		known[p] = true
	}
	for _, s := range strings.Split(platforms, ",") {
		if !known[s] {
			return nil, fmt.Errorf("-platforms: unknown platform %q; known: %s", s, strings.Join(Platforms, ", "))
		}
		goos, goarch, _ := strings.Cut(s, "/")
		r.platforms = append(r.platforms, platform{goos, goarch})
	}
	if r.version == "" {
		src, err := os.ReadFile("cmd/bank/root.go")
		if err != nil {
			return nil, err
		}
		m := regexp.MustCompile(`(?m)^var version = "([^"]+)"`).FindSubmatch(src)
		if m == nil {
			return nil, errors.New(`cmd/bank/root.go has no line var version = "…": pass -version`)
		}
		r.version = string(m[1])
	}
	if !semverRE.MatchString(r.version) {
		return nil, fmt.Errorf("version %q is not of the form 1.2.3 (npm needs one)", r.version)
	}
	epoch := os.Getenv("SOURCE_DATE_EPOCH")
	if r.commit == "" {
		head, err := git("rev-parse", "HEAD")
		if err != nil {
			return nil, fmt.Errorf("no commit from git (%v): pass -commit", err)
		}
		r.commit = head
		if changed, _ := git("status", "--porcelain", "--untracked-files=no"); changed != "" {
			r.commit += "-dirty"
		}
		if epoch == "" {
			epoch, _ = git("log", "-1", "--format=%ct", "HEAD")
		}
	}
	secs, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		secs = 315532800 // 1980-01-01, the first time a zip file can hold
	}
	r.epoch = time.Unix(secs, 0).UTC()
	return r, nil
}

// run runs a program (through scenarios/lab/procs, as every child of bank's is)
// and returns what it printed on stdout; its stderr goes to ours.
func run(env []string, name string, args ...string) ([]byte, error) {
	var out bytes.Buffer
	s := procs.Spec{Path: name, Args: args, Env: env, Stdout: &out, Stderr: os.Stderr}
	err := s.Run(context.Background())
	return out.Bytes(), err
}

func git(args ...string) (string, error) {
	out, err := run(nil, "git", args...)
	return strings.TrimSpace(string(out)), err
}

// buildAll builds bank for every platform into a scratch directory.
func (r *release) buildAll() error {
	if err := os.MkdirAll(r.out, 0o755); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(r.out, ".build-")
	if err != nil {
		return err
	}
	r.build = dir
	ldflags := fmt.Sprintf("-s -w -buildid= -X main.version=%s -X main.commit=%s", r.version, r.commit)
	for _, p := range r.platforms {
		fmt.Fprintf(os.Stderr, "dist: go build for %s\n", p)
		env := []string{"CGO_ENABLED=0", "GOOS=" + p.goos, "GOARCH=" + p.goarch, "GOFLAGS="}
		if _, err := run(env, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags,
			"-o", filepath.Join(dir, p.goos+"-"+p.goarch, p.binary()), "./cmd/bank"); err != nil {
			return fmt.Errorf("go build for %s: %w", p, err)
		}
		notices, err := thirdParty(p)
		if err != nil {
			return err
		}
		r.notices[p] = notices
	}
	return nil
}

// readLicense reads the lab's licence and checks that it is the one
// every package.json names.
func readLicense(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the licence: %w", err)
	}
	if first, _, _ := strings.Cut(string(raw), "\n"); first != licenseID+" License" {
		return nil, fmt.Errorf("%s starts %q, not %q: the package.json files say %q", path, first, licenseID+" License", licenseID)
	}
	return raw, nil
}

// thirdParty is THIRD_PARTY_LICENSES for platform p: the licence and
// notice files of Go (its runtime and standard library are in every
// binary) and of every module go list says the binary is built from, in
// the order go list gives (sorted by path). A module with no licence file
// stops the release: its terms must be known before it is shipped.
func thirdParty(p platform) ([]byte, error) {
	env := []string{"CGO_ENABLED=0", "GOOS=" + p.goos, "GOARCH=" + p.goarch, "GOFLAGS="}
	out, err := run(env, "go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}}\t{{.Version}}\t{{.Dir}}{{end}}{{end}}", "./cmd/bank")
	if err != nil {
		return nil, fmt.Errorf("go list for %s: %w", p, err)
	}
	root, err := run(nil, "go", "env", "GOROOT")
	if err != nil {
		return nil, fmt.Errorf("go env GOROOT: %w", err)
	}
	goVersion, err := run(nil, "go", "env", "GOVERSION")
	if err != nil {
		return nil, fmt.Errorf("go env GOVERSION: %w", err)
	}
	type module struct{ path, version, dir string }
	mods := []module{{"Go, its runtime and standard library", strings.TrimSpace(string(goVersion)), strings.TrimSpace(string(root))}}
	seen := map[string]bool{}
	var deps []module
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 || seen[f[0]] {
			continue
		}
		seen[f[0]] = true
		deps = append(deps, module{f[0], f[1], f[2]})
	}
	sort.Slice(deps, func(i, j int) bool { return deps[i].path < deps[j].path })
	mods = append(mods, deps...)
	var b strings.Builder
	fmt.Fprintf(&b, "bank for %s is built with Go and with the Go modules below; each is in the\n", p)
	fmt.Fprintf(&b, "binary under its own licence, reproduced here. bank itself: see LICENSE.\n")
	rule := strings.Repeat("=", 72)
	for _, m := range mods {
		files, err := licenceFiles(m.dir)
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%s %s has no licence file in %s: read its terms before bank ships it", m.path, m.version, m.dir)
		}
		fmt.Fprintf(&b, "\n%s\n%s %s\n", rule, m.path, m.version)
		for _, name := range files {
			raw, err := os.ReadFile(filepath.Join(m.dir, name))
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(&b, "%s\n-- %s --\n\n%s\n", rule[:24], name, strings.TrimRight(strings.ReplaceAll(string(raw), "\r\n", "\n"), "\n"))
		}
	}
	return []byte(b.String()), nil
}

var licenceName = regexp.MustCompile(`(?i)^(licen[cs]e|copying|notice|unlicense)(-[a-z0-9]+)?(\.(md|txt|rst))?$`)

// licenceFiles are the licence and notice files at the top of dir,
// sorted.
func licenceFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the licence of %s: %w", dir, err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && licenceName.MatchString(e.Name()) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

func (r *release) binaryOf(p platform) string {
	return filepath.Join(r.build, p.goos+"-"+p.goarch, p.binary())
}

// archives writes OUT/bank-VERSION-GOOS-GOARCH.{tar.gz,zip} and
// OUT/SHA256SUMS, replacing any archives of an earlier run.
func (r *release) archives() error {
	old, _ := filepath.Glob(filepath.Join(r.out, "bank-*"))
	for _, f := range append(old, filepath.Join(r.out, "SHA256SUMS")) {
		os.Remove(f)
	}
	readme, err := os.ReadFile(filepath.Join(npmSources, "README.md"))
	if err != nil {
		return err
	}
	sums := map[string][]byte{}
	for _, p := range r.platforms {
		bin, err := os.ReadFile(r.binaryOf(p))
		if err != nil {
			return err
		}
		top := strings.TrimSuffix(strings.TrimSuffix(p.archive(r.version), ".zip"), ".tar.gz")
		files := []file{{top + "/" + p.binary(), 0o755, bin}, {top + "/README.md", 0o644, readme},
			{top + "/" + licenseFile, 0o644, r.license}, {top + "/" + noticesFile, 0o644, r.notices[p]}}
		var raw []byte
		if p.goos == "windows" {
			raw, err = zipOf(files, r.epoch)
		} else {
			raw, err = tarGzOf(top, files, r.epoch)
		}
		if err != nil {
			return err
		}
		name := p.archive(r.version)
		if err := os.WriteFile(filepath.Join(r.out, name), raw, 0o644); err != nil {
			return err
		}
		sums[name] = raw
	}
	if err := writeSums(r.out, sums); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "dist: %d archives and SHA256SUMS in %s (version %s, commit %s)\n", len(sums), r.out, r.version, r.commit)
	return nil
}

type file struct {
	name string
	mode int64
	data []byte
}

// tarGzOf packs files, in the order given, below the directory top.
func tarGzOf(top string, files []file, epoch time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression) // no name, no time: gzip.Header left empty
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	hdr := func(name string, mode int64, size int64, typ byte) *tar.Header {
		return &tar.Header{Name: name, Mode: mode, Size: size, Typeflag: typ, ModTime: epoch, Format: tar.FormatUSTAR}
	}
	if err := tw.WriteHeader(hdr(top+"/", 0o755, 0, tar.TypeDir)); err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := tw.WriteHeader(hdr(f.name, f.mode, int64(len(f.data)), tar.TypeReg)); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// zipOf packs files, in the order given.
func zipOf(files []file, epoch time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: epoch}
		h.SetMode(os.FileMode(f.mode))
		w, err := zw.CreateHeader(h)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeSums writes dir/SHA256SUMS in the format sha256sum -c reads.
func writeSums(dir string, files map[string][]byte) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		sum := sha256.Sum256(files[n])
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(sum[:]), n)
	}
	return os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(b.String()), 0o644)
}
