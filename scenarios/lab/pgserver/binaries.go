package pgserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"

	embeddedpostgres "github.com/fergusstrange/embedded-postgres"

	"github.com/zudojs/bank/scenarios/lab/procs"
)

// Binaries is a PostgreSQL installation that can run the lab's server.
type Binaries struct {
	Dir    string // holds bin/pg_ctl, bin/initdb and bin/postgres
	Major  int    // PostgreSQL major version, e.g. 15
	Source string // how it was found, for -v and error messages
}

// DownloadMajor is the version fetched by embedded-postgres when nothing
// usable is installed.
const DownloadMajor = 17

// ErrNoBinaries means no PostgreSQL could be found or fetched.
var ErrNoBinaries = errors.New("no PostgreSQL found: install PostgreSQL (" + installAdvice + "), pass --pg-binaries DIR, or use --database-url URL")

func (b Binaries) bin(name string) string {
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	return filepath.Join(b.Dir, "bin", name)
}

func findBinaries(ctx context.Context, o Options, cache string, say func(string)) (Binaries, error) {
	if o.Binaries != "" {
		b, err := explicitBinaries("--pg-binaries", o.Binaries)
		if err != nil {
			return Binaries{}, &Error{err}
		}
		return b, nil
	}
	libCache := o.LibraryCache
	if libCache == "" {
		libCache = libraryCacheDir()
	}
	// The library's cache: archives it downloaded before, already unpacked
	// by us or not.
	if major := cachedArchiveMajor(libCache); major > 0 {
		if b, err := fetch(ctx, o, libCache, cache, major, say); err == nil {
			return b, nil
		}
	}
	if !o.SkipInstalled {
		if b, ok := rememberedInstalled(cache); ok {
			return b, nil
		}
	}
	if o.Fallback != "" {
		b, err := explicitBinaries("BANK_PG_FALLBACK", o.Fallback)
		if err != nil {
			return Binaries{}, &Error{err}
		}
		return b, nil
	}
	major := o.DownloadMajor
	if major == 0 {
		major = DownloadMajor
	}
	b, err := fetch(ctx, o, libCache, cache, major, say)
	if err != nil {
		return Binaries{}, &Error{fmt.Errorf("%w (download failed: %v)", ErrNoBinaries, err)}
	}
	return b, nil
}

// libraryVersion is the embedded-postgres version string for a major
// version. The library compares it with the data directory's PG_VERSION
// by prefix, so the major number is what matters.
func libraryVersion(major int) embeddedpostgres.PostgresVersion {
	switch major {
	case 18:
		return embeddedpostgres.V18
	case 17:
		return embeddedpostgres.V17
	case 16:
		return embeddedpostgres.V16
	case 15:
		return embeddedpostgres.V15
	case 14:
		return embeddedpostgres.V14
	case 13:
		return embeddedpostgres.V13
	}
	return embeddedpostgres.PostgresVersion(fmt.Sprintf("%d.0.0", major))
}

// explicitBinaries checks a directory given with --pg-binaries,
// BANK_PG_BINARIES or BANK_PG_FALLBACK (from names which). Both the
// installation root and its bin directory are accepted.
func explicitBinaries(from, dir string) (Binaries, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Binaries{}, err
	}
	for _, root := range []string{abs, filepath.Dir(abs)} {
		b := Binaries{Dir: root, Source: from + " " + dir}
		if complete(b) {
			b.Major, err = majorOf(b)
			return b, err
		}
	}
	return Binaries{}, fmt.Errorf("%s %s: no bin/pg_ctl, bin/initdb and bin/postgres there; point it at a PostgreSQL installation such as /usr/lib/postgresql/15", from, dir)
}

func complete(b Binaries) bool {
	for _, name := range []string{"pg_ctl", "initdb", "postgres"} {
		info, err := os.Stat(b.bin(name))
		if err != nil || info.IsDir() || (runtime.GOOS != "windows" && info.Mode()&0o111 == 0) {
			return false
		}
	}
	return true
}

var digitsRE = regexp.MustCompile(`\d+`)

var versionRE = regexp.MustCompile(`\(PostgreSQL\) (\d+)`)

func majorOf(b Binaries) (int, error) {
	var stdout bytes.Buffer
	pgCtl := procs.Spec{Path: b.bin("pg_ctl"), Args: []string{"--version"}, Stdout: &stdout}
	if err := pgCtl.Run(context.Background()); err != nil {
		return 0, fmt.Errorf("%s --version: %w", b.bin("pg_ctl"), err)
	}
	out := stdout.Bytes()
	m := versionRE.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("%s --version printed %q, not a PostgreSQL version", b.bin("pg_ctl"), strings.TrimSpace(string(out)))
	}
	return strconv.Atoi(string(m[1]))
}

// libraryCacheDir is where embedded-postgres keeps the archives it
// downloaded (its default when no CachePath is set).
func libraryCacheDir() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ".embedded-postgres-go"
	}
	return filepath.Join(home, ".embedded-postgres-go")
}

// cachedArchiveMajor returns the newest major version whose archive the
// library has already downloaded for this platform, or 0.
func cachedArchiveMajor(libCache string) int {
	pattern := filepath.Join(libCache, fmt.Sprintf("embedded-postgres-binaries-%s-*.txz", runtime.GOOS))
	matches, _ := filepath.Glob(pattern)
	best := 0
	for _, m := range matches {
		v := strings.TrimSuffix(filepath.Base(m), ".txz")
		v = v[strings.LastIndex(v, "-")+1:]
		major, err := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
		if err == nil && major > best && filepath.Base(m) == archiveName(libraryVersion(major)) {
			best = major
		}
	}
	return best
}

// libraryArch is the architecture in the names of the archives
// embedded-postgres fetches for version v on this machine, as its
// version strategy (unexported) names it: arm64v8, arm32v7 or arm32v6
// (from uname -m), -alpine on Alpine Linux, and amd64 on an Apple arm64
// for PostgreSQL before 14.2, which has no arm64 build.
func libraryArch(v embeddedpostgres.PostgresVersion) string {
	arch := runtime.GOARCH
	switch runtime.GOOS {
	case "linux":
		switch arch {
		case "arm64":
			arch += "v8"
		case "arm":
			m := machine()
			if strings.HasPrefix(m, "armv7") {
				arch += "32v7"
			} else if strings.HasPrefix(m, "armv6") {
				arch += "32v6"
			}
		}
		if _, err := os.Stat("/etc/alpine-release"); err == nil {
			arch += "-alpine"
		}
	case "darwin":
		if arch == "arm64" {
			var major, minor int
			if _, err := fmt.Sscanf(string(v), "%d.%d", &major, &minor); err == nil && (major < 14 || major == 14 && minor < 2) {
				arch = "amd64"
			} else {
				arch += "v8"
			}
		}
	}
	return arch
}

// rememberedInstalled is installedBinaries, remembered in the cache
// directory for as long as nothing it looks at has changed (PATH, what
// pg_config and pg_ctl on it are, the installations the usual places
// hold). Looking costs two programs run (pg_config is a script on
// Debian), about 5 ms of every run; checking that nothing changed costs
// a few stats.
func rememberedInstalled(cache string) (Binaries, bool) {
	record := filepath.Join(cache, "installed")
	key := installedKey()
	if raw, ok := readSmall(record); ok {
		if f := strings.Split(raw, "\n"); len(f) == 3 && f[0] == key {
			b := Binaries{Dir: f[1]}
			if b.Major, _ = strconv.Atoi(f[2]); b.Major > 0 && complete(b) {
				b.Source = "installed PostgreSQL " + f[2] + " at " + b.Dir
				return b, true
			}
		}
	}
	b, ok := installedBinaries()
	if ok {
		_ = writeFile(record, []byte(key+"\n"+b.Dir+"\n"+strconv.Itoa(b.Major)), 0o600)
	}
	return b, ok
}

// installedKey sums up what installedBinaries's choice depends on.
func installedKey() string {
	h := sha256.New()
	fmt.Fprintln(h, os.Getenv("PATH"))
	stat := func(p string) {
		if info, err := os.Stat(p); err == nil {
			fmt.Fprintln(h, p, info.Size(), info.ModTime().UnixNano())
		}
	}
	for _, name := range []string{"pg_config", "pg_ctl"} {
		if p, err := exec.LookPath(name); err == nil {
			real, _ := filepath.EvalSymlinks(p)
			fmt.Fprintln(h, name, p, real)
			stat(p)
		}
	}
	for _, pattern := range installPatterns {
		for _, dir := range newestFirst(pattern) {
			stat(filepath.Join(dir, "pg_ctl"+exeSuffix))
		}
	}
	for _, dir := range installDirs {
		stat(filepath.Join(dir, "pg_ctl"+exeSuffix))
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// Where installations usually are: Debian, Red Hat, Homebrew and
// Postgres.app (each * a version), then a few plain directories.
var (
	installPatterns = []string{
		"/usr/lib/postgresql/*/bin",
		"/usr/pgsql-*/bin",
		"/opt/homebrew/opt/postgresql@*/bin",
		"/usr/local/opt/postgresql@*/bin",
		"/Applications/Postgres.app/Contents/Versions/*/bin",
	}
	installDirs = []string{"/opt/homebrew/bin", "/usr/local/bin", "/usr/local/pgsql/bin"}
)

// installedBinaries looks for a PostgreSQL installed on the machine: on
// PATH first, then the usual places of Debian, Red Hat, Homebrew and
// Postgres.app.
func installedBinaries() (Binaries, bool) {
	candidates := onPath()
	for _, pattern := range installPatterns {
		candidates = append(candidates, newestFirst(pattern)...)
	}
	candidates = append(candidates, installDirs...)
	for _, binDir := range candidates {
		b := Binaries{Dir: filepath.Dir(binDir)}
		if !complete(b) {
			continue
		}
		major, err := majorOf(b)
		if err != nil {
			continue
		}
		b.Major = major
		b.Source = "installed PostgreSQL " + strconv.Itoa(major) + " at " + b.Dir
		return b, true
	}
	return Binaries{}, false
}

// onPath is the installations PATH names, in PATH's order: a directory
// with pg_ctl is one (its real directory, through links), and one with
// only pg_config is the one pg_config names. So a pg_ctl first on PATH
// wins over a pg_config further on, and the other way round.
func onPath() []string {
	var dirs []string
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" {
			continue
		}
		if p, err := exec.LookPath(filepath.Join(dir, "pg_ctl")); err == nil {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				dirs = append(dirs, filepath.Dir(real))
			}
			continue
		}
		if p, err := exec.LookPath(filepath.Join(dir, "pg_config")); err == nil {
			var bindir strings.Builder
			pgConfig := procs.Spec{Path: p, Args: []string{"--bindir"}, Stdout: &bindir}
			if pgConfig.Run(context.Background()) == nil {
				dirs = append(dirs, strings.TrimSpace(bindir.String()))
			}
		}
	}
	return dirs
}

// newestFirst expands a glob whose * is a version number, newest first.
func newestFirst(pattern string) []string {
	matches, _ := filepath.Glob(pattern)
	num := func(s string) int {
		digits := digitsRE.FindString(s[strings.Index(pattern, "*"):])
		n, _ := strconv.Atoi(digits)
		return n
	}
	sort.Slice(matches, func(i, j int) bool { return num(matches[i]) > num(matches[j]) })
	return matches
}
