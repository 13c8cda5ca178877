package starter

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// TestMain removes the PostgreSQL base that pgtest.CacheDir seeds the
// grades' private caches from.
func TestMain(m *testing.M) { pgtest.Caches(m) }

// want are the files each starter writes, in order.
var want = map[string][]string{
	"go":     {"README.md", "go.mod", "go.sum", "main.go"},
	"node":   {"README.md", "package.json", "server.js"},
	"python": {"README.md", "server.py"},
}

// server is each starter's server, the file a learner works in.
var server = map[string]string{"go": "main.go", "node": "server.js", "python": "server.py"}

func TestLanguages(t *testing.T) {
	t.Parallel()
	if got := Languages(); !slices.Equal(got, []string{"go", "node", "python"}) {
		t.Errorf("Languages() = %v", got)
	}
}

func TestWriteRefusesAnUnknownLanguage(t *testing.T) {
	t.Parallel()
	for _, lang := range []string{"ruby", "", "../go", "_files", "Go"} {
		dir := filepath.Join(t.TempDir(), "new")
		_, err := Write(lang, dir)
		if err == nil || !strings.Contains(err.Error(), "go, node, python") {
			t.Errorf("Write(%q) = %v, want an error naming go, node, python", lang, err)
		}
		if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Write(%q) made %s (%v)", lang, dir, err)
		}
	}
	if _, err := Write("go", ""); err == nil {
		t.Error(`Write("go", "") wrote in the current folder`)
	}
}

// TestWriteListsFiles: each starter is written whole into a folder that
// did not exist, as it is kept (go.mod and go.sum under their own names),
// and Write lists each file it wrote.
func TestWriteListsFiles(t *testing.T) {
	t.Parallel()
	for _, lang := range Languages() {
		dir := filepath.Join(t.TempDir(), "learner", lang)
		got, err := Write(lang, dir)
		if err != nil {
			t.Fatalf("Write(%s): %v", lang, err)
		}
		var paths []string
		for _, name := range want[lang] {
			paths = append(paths, filepath.Join(dir, name))
		}
		if !slices.Equal(got, paths) {
			t.Errorf("Write(%s) = %v, want %v", lang, got, paths)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != len(paths) {
			t.Errorf("%s holds %d entries, want %d: %v", dir, len(entries), len(paths), entries)
		}
		list, _ := Servers.starterFiles(lang)
		for _, f := range list {
			kept, _ := files.ReadFile(f.src)
			target := filepath.Join(dir, f.name)
			written, err := os.ReadFile(target)
			if err != nil || !bytes.Equal(written, kept) {
				t.Errorf("%s is not the kept %s (%v)", target, f.src, err)
			}
			info, err := os.Lstat(target)
			if err != nil || !info.Mode().IsRegular() {
				t.Errorf("%s: %v, %v", target, info, err)
			} else if perm := info.Mode().Perm(); runtime.GOOS != "windows" && (perm&^0o644 != 0 || perm&0o600 != 0o600) {
				t.Errorf("%s is %v, want 0644 (less the umask)", target, perm)
			}
		}
		if info, err := os.Stat(dir); err != nil || (runtime.GOOS != "windows" && info.Mode().Perm()&^0o755 != 0) {
			t.Errorf("%s: %v, %v (want a folder 0755)", dir, info, err)
		}
	}
}

// TestWriteRefusesWhatIsThere: a file, a folder or a link, even a broken
// one, where a starter's file goes stops the whole starter: Write names
// it, writes none of the others, and leaves what was there (and where a
// link points) as it was.
func TestWriteRefusesWhatIsThere(t *testing.T) {
	t.Parallel()
	type planted struct {
		name  string
		plant func(t *testing.T, target, outside string)
	}
	cases := []planted{
		{"server.py", func(t *testing.T, target, _ string) { write(t, target, "mine") }},
		{"README.md", func(t *testing.T, target, _ string) { os.Mkdir(target, 0o755) }},
	}
	if runtime.GOOS != "windows" { // links need privileges there
		cases = append(cases,
			planted{"server.py", func(t *testing.T, target, outside string) { os.Symlink(outside, target) }},
			planted{"README.md", func(t *testing.T, target, outside string) {
				write(t, outside, "not yours")
				os.Symlink(outside, target)
			}})
	}
	for _, c := range cases {
		dir, outside := t.TempDir(), filepath.Join(t.TempDir(), "elsewhere")
		target := filepath.Join(dir, c.name)
		c.plant(t, target, outside)
		before, _ := os.ReadFile(outside)
		_, err := Write("python", dir)
		if err == nil || !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), target) {
			t.Errorf("%s planted: Write = %v, want an error naming it", c.name, err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("%s planted: %s holds %v, want it alone", c.name, dir, entries)
		}
		if after, _ := os.ReadFile(outside); !bytes.Equal(before, after) {
			t.Errorf("%s planted: the link's target was written (%d bytes)", c.name, len(after))
		}
	}
	// Each file that is there is named, not only the first.
	dir := t.TempDir()
	for _, name := range want["node"][1:] {
		write(t, filepath.Join(dir, name), "mine")
	}
	_, err := Write("node", dir)
	for _, name := range want["node"][1:] {
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, name)) {
			t.Errorf("Write over two files = %v, want an error naming %s", err, name)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "README.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("README.md was written beside the files that were there (%v)", err)
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestStartersAreSmall: each server is short enough for a beginner to
// read, reads the contract's three variables, and says where the
// learner's work goes: the key table, the claim, the stored answer.
func TestStartersAreSmall(t *testing.T) {
	t.Parallel()
	for lang, name := range server {
		src, err := files.ReadFile("_files/" + lang + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if lines := bytes.Count(src, []byte("\n")); lines >= 250 {
			t.Errorf("%s/%s has %d lines: a starter is to be read by a beginner", lang, name, lines)
		}
		for _, must := range []string{"DATABASE_URL", "PORT", "LOCK_TTL_MS", "127.0.0.1", "FOR UPDATE", "ORDER BY id",
			"YOUR WORK: create your key table", "YOUR WORK: claim the key here, before the transfer",
			"YOUR WORK: store the answer", "same transaction", "Idempotency-Key header is ignored"} {
			if !strings.Contains(string(src), must) {
				t.Errorf("%s/%s does not say %q", lang, name, must)
			}
		}
	}
}

// TestOneDriverEach: each starter names its one driver, at the version
// the lab itself builds and tests with (the Node.js grade below borrows
// the corpus server's node_modules, and the Go one the module cache of
// this module's own pgx).
func TestOneDriverEach(t *testing.T) {
	t.Parallel()
	pkg, _ := files.ReadFile("_files/node/package.json")
	var manifest struct{ Dependencies map[string]string }
	if err := json.Unmarshal(pkg, &manifest); err != nil {
		t.Fatal(err)
	}
	corpus, err := os.ReadFile(filepath.Join(repoRoot(t), "testdata", "grade", "node-server", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	pg := regexp.MustCompile(`"pg": "([^"]+)"`).FindSubmatch(corpus)
	if pg == nil || len(manifest.Dependencies) != 1 || manifest.Dependencies["pg"] != string(pg[1]) {
		t.Errorf("the Node.js starter depends on %v, want pg %s alone (as testdata/grade/node-server)", manifest.Dependencies, pg)
	}
	mod, _ := files.ReadFile("_files/go/go.mod.txt")
	ours, err := os.ReadFile(filepath.Join(repoRoot(t), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	pgx := regexp.MustCompile(`(?m)^\s*(?:require )?github.com/jackc/pgx/v5 (v\S+)$`)
	direct := regexp.MustCompile(`(?m)^require (\S+) `).FindAllSubmatch(mod, -1)
	if m, o := pgx.FindSubmatch(mod), pgx.FindSubmatch(ours); m == nil || o == nil || !bytes.Equal(m[1], o[1]) || len(direct) != 1 {
		t.Errorf("the Go starter's go.mod requires pgx %s (and %d direct modules), want the module's %s alone:\n%s", m, len(direct), o, mod)
	}
	for _, lang := range Languages() {
		readme, _ := files.ReadFile("_files/" + lang + "/README.md")
		install := map[string]string{"go": "github.com/jackc/pgx/v5 v5.13.0", "node": "npm install", "python": `pip install "psycopg[binary]"`}[lang]
		if !bytes.Contains(readme, []byte(install)) || !bytes.Contains(readme, []byte("bank grade -- ")) {
			t.Errorf("%s/README.md says neither how to install its driver (%s) nor how to grade it", lang, install)
		}
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", "..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// firstGrade is what a server with no idempotency gets on its first grade:
// each check's verdict and, for a failure, the lesson's mistake its
// evidence names (torture's too: retries that moved money again with no
// copy ever replayed or refused are no-keys). It comes
// from real runs of the three starters, and is what bank serve --mistake
// no-keys gets too: plain passes, and so do the checks that send no copy
// under a key of the same user (other-user) or whose retry must make the
// transfer anyway (outage, crash); every other check fails, for want of
// keys. A check the grader gains must be added here, with the verdict a
// starter gets.
var firstGrade = map[string]struct{ verdict, mistake string }{
	"plain":          {"pass", ""},
	"other-user":     {"pass", ""},
	"outage":         {"pass", ""},
	"crash":          {"pass", ""},
	"lost-response":  {"fail", "no-keys"},
	"replayed":       {"fail", "no-keys"},
	"reordered":      {"fail", "no-keys"},
	"other-body":     {"fail", "no-keys"},
	"no-key":         {"fail", "key-optional"},
	"refusal":        {"fail", "refusal-not-stored"},
	"double-tap":     {"fail", "no-keys"},
	"storm":          {"fail", "no-keys"},
	"crash-on-store": {"fail", "second-transaction"},
	"pause":          {"fail", "keys-not-shared"},
	"restart":        {"fail", "no-keys"},
	"lookup":         {"fail", "no-lookup"},
	"torture":        {"fail", "no-keys"},
}

// TestGradeStarters writes each starter into an empty folder, as a
// learner would, runs it the way its README says, and grades it with the
// real grader: it fails only the idempotency checks (firstGrade). Python
// needs psycopg 3 and Node.js the pg package (make test installs it in
// testdata/grade/node-server); where one is missing the subtest says so
// loudly, or fails where CI requires it (BANK_REQUIRE_CORPUS, which
// installs both for the corpus, and BANK_REQUIRE_NODE).
func TestGradeStarters(t *testing.T) {
	bank, cleanup, err := pgtest.BuildBank("github.com/zudojs/bank/cmd/bank")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	for _, lang := range Languages() {
		t.Run(lang, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := Write(lang, dir); err != nil {
				t.Fatal(err)
			}
			command, env := run(t, lang, dir)
			rep, code, stderr := gradeIn(t, bank, dir, env, command...)
			if code != 1 || rep.Verdict != "fail" {
				t.Errorf("bank grade exit %d, verdict %s: want 1 and fail, a required check failed\n%s", code, rep.Verdict, stderr)
			}
			seen := map[string]bool{}
			for _, c := range rep.Checks {
				seen[c.Name] = true
				w, ok := firstGrade[c.Name]
				switch {
				case !ok:
					t.Errorf("the grader has a check %q (%s) that firstGrade does not know: add it, with the verdict a server with no keys gets", c.Name, c.Verdict)
				case c.Verdict != w.verdict || c.Mistake != w.mistake:
					t.Errorf("%s: %s (mistake %q), want %s (mistake %q): %s\n  %s", c.Name, c.Verdict, c.Mistake, w.verdict, w.mistake, c.Why, strings.Join(c.Evidence, "\n  "))
				}
			}
			for name := range firstGrade {
				if !seen[name] {
					t.Errorf("the grader ran no check %q", name)
				}
			}
		})
	}
}

// run is how the learner runs the starter written in dir (relative to
// it), and the environment it needs beyond the test's.
func run(t *testing.T, lang, dir string) ([]string, []string) {
	t.Helper()
	switch lang {
	case "python":
		for _, p := range []string{"python3", "/usr/bin/python3"} { // Debian's python3-psycopg is /usr/bin's
			if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import psycopg").Run() == nil {
				return []string{path, "server.py"}, nil
			}
		}
		missing(t, "BANK_REQUIRE_CORPUS", "no python3 with psycopg 3: install python3-psycopg, or pip install \"psycopg[binary]\"")
	case "node":
		modules := filepath.Join(repoRoot(t), "testdata", "grade", "node-server", "node_modules")
		node, err := exec.LookPath("node")
		if err == nil {
			_, err = os.Stat(filepath.Join(modules, "pg", "package.json"))
		}
		if err != nil {
			if os.Getenv("BANK_REQUIRE_NODE") != "" {
				t.Fatalf("the Node.js starter cannot run (%v), and this run requires it (BANK_REQUIRE_NODE): install nodejs and npm, then make node-server", err)
			}
			missing(t, "BANK_REQUIRE_CORPUS", "Node.js or pg is missing (%v): install nodejs and npm, then make node-server runs npm ci in %s", err, filepath.Dir(modules))
		}
		return []string{node, "server.js"}, []string{"NODE_PATH=" + modules} // in place of npm install
	case "go":
		// With its own go.mod and go.sum as written, read-only: the go.sum
		// must be whole. The module cache holds pgx, this module's too.
		env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
		for _, args := range [][]string{{"vet", "."}, {"build", "-o", "server", "."}} {
			cmd := exec.Command("go", args...)
			cmd.Dir, cmd.Env = dir, env
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("go %s in the Go starter: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
		return []string{"./server"}, nil
	}
	t.Fatalf("no way to run the %s starter", lang)
	return nil, nil
}

// missing skips the test, loudly, or fails it where the run requires it.
func missing(t *testing.T, require, format string, args ...any) {
	t.Helper()
	if os.Getenv(require) != "" {
		t.Fatalf("the starter cannot run, and this run requires it (%s): "+format, append([]any{require}, args...)...)
	}
	pgtest.Skip(t, "STARTER NOT GRADED: "+format, args...)
}

// report is the part of bank grade --json's report card the test reads.
type report struct {
	Checks []struct {
		Name     string   `json:"name"`
		Verdict  string   `json:"verdict"`
		Why      string   `json:"why"`
		Mistake  string   `json:"mistake"`
		Evidence []string `json:"evidence"`
	} `json:"checks"`
	Verdict string `json:"verdict"`
}

// gradeIn runs bank grade --json -- command in dir, with a private
// PostgreSQL, and returns its report card, exit status and stderr.
func gradeIn(t *testing.T, bank, dir string, env []string, command ...string) (report, int, string) {
	t.Helper()
	cmd := exec.Command(bank, append([]string{"grade", "--json", "--"}, command...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "BANK_CACHE_DIR="+pgtest.CacheDir(t), "DATABASE_URL="), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("bank grade: %v", err)
	}
	var rep report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("bank grade -- %s printed no report (%v, exit %d): %s\n%s", strings.Join(command, " "), err, code, out, stderr.String())
	}
	return rep, code, stderr.String()
}
