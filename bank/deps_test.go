package bank_test

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

const module = "github.com/zudojs/bank"

// TestDependencyRules writes the design's dependency rules down and checks
// them over the whole module with go list.
func TestDependencyRules(t *testing.T) {
	// go list reads the whole module; go test's cache must know it did.
	if err := pgtest.Inputs(".."); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "list", "-deps", "-test", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, "|")
		pkg, _, _ = strings.Cut(pkg, " ") // "pkg [pkg.test]" variants
		imports[pkg] = append(imports[pkg], strings.Fields(deps)...)
	}
	own := func(p string) bool { return strings.HasPrefix(p, module+"/") }
	// The layout's layers, lowest first: a package may import its own
	// layer's and lower ones', never one above it. The bank (domain, API,
	// client, checks) and the key store are at the bottom; the lab's
	// machinery (processes, PostgreSQL's owner, the catalogue of mistakes
	// and the code made wrong on purpose, the harness, the renderer) sits
	// on them in scenarios/lab; the lessons on the harness; practice on
	// the lessons; the command on everything.
	layers := [][]string{
		{"idem", "bank", "scenarios/lab/procs", "scenarios/lab/mistakes", "scenarios/lab/pgserver/download", "cmd/bank/help"},
		{"bank/api", "bank/client", "bank/audit", "scenarios/lab/pgserver"},
		{"scenarios/lab/pgserver/pgtest", "scenarios/lab/mistakes/onpurpose"},
		{"scenarios/lab"},
		{"scenarios/lab/render"},
		{"scenarios"},
		{"scenarios/practice"},
	}
	layer := func(pkg string) int {
		p := strings.TrimSuffix(strings.TrimPrefix(pkg, module+"/"), "_test")
		if strings.HasPrefix(p, "cmd/") && p != "cmd/bank/help" {
			return len(layers) // the commands and their own packages, on top
		}
		for i, l := range layers {
			if slices.Contains(l, p) {
				return i
			}
		}
		return -1
	}
	// The layers bind the code; a test may reach for the tests' own tools.
	out, err = exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, list, _ := strings.Cut(line, "|")
		deps := strings.Fields(list)
		if layer(pkg) < 0 {
			t.Errorf("%s is in no layer of the layout: write down where it sits", pkg)
			continue
		}
		for _, d := range deps {
			if own(d) && layer(d) > layer(pkg) && strings.TrimSuffix(pkg, "_test") != d {
				t.Errorf("%s imports %s, a layer above it", pkg, d)
			}
		}
	}
	rules := []struct {
		pkg    string
		banned func(dep string) bool
		why    string
	}{
		{module + "/idem", own, "idem knows nothing of the bank or the lab"},
		{module + "/bank", own, "the domain imports nothing of ours: the API composes it with idem"},
		{module + "/bank", func(d string) bool { return d == "net/http" || strings.HasPrefix(d, "net/http/") }, "the domain knows no HTTP: bank/api owns the wire"},
		{module + "/bank/api", func(d string) bool { return own(d) && d != module+"/bank" && d != module+"/idem" }, "the API composes bank and idem, nothing else"},
		{module + "/bank/client", own, "the client speaks HTTP only"},
		{module + "/bank/audit", func(d string) bool { return own(d) && d != module+"/bank" && d != module+"/idem" }, "the checks read the bank's books, nothing else"},
		{module + "/scenarios/lab/procs", own, "process lifetime knows nothing of the lab"},
		{module + "/scenarios/lab/mistakes", own, "the catalogue of mistakes is data: it imports nothing of ours"},
		{module + "/scenarios/lab/pgserver", func(d string) bool {
			return own(d) && d != module+"/scenarios/lab/procs" && d != module+"/scenarios/lab/pgserver/download"
		}, "the server owner knows no schema: callers give it their template"},
		{module + "/scenarios/lab/pgserver/download", own, "a download needs nothing of ours"},
		{module + "/scenarios/lab/pgserver/pgtest", func(d string) bool { return own(d) && d != module+"/scenarios/lab/pgserver" }, "each test package says what its template holds"},
		{module + "/scenarios", func(d string) bool {
			return strings.Contains(d, "embedded-postgres") || strings.HasPrefix(d, module+"/cmd")
		}, "scenarios reach the server through pgserver"},
		{module + "/scenarios", func(d string) bool {
			return d == module+"/scenarios/lab/render" || d == module+"/scenarios/practice"
		}, "a lesson tells its story to the lab; drawing it and practising on it come after"},
		{module + "/cmd/bank/help", own, "the manual is text: it imports nothing of ours"},
		{module + "/cmd/dist", func(d string) bool {
			return own(d) && d != module+"/scenarios/lab/procs" && d != module+"/scenarios/lab/pgserver/pgtest"
		}, "dist builds the release archives and npm packages, running go, git and npm through procs (its tests say through pgtest.Skip when npm is missing)"},
		{module + "/scenarios/lab", func(d string) bool {
			return d == module+"/scenarios/lab/mistakes/onpurpose" || d == module+"/scenarios/lab/render"
		},
			"the harness knows no lesson, renderer or broken server"},
		{module + "/scenarios/lab/render", func(d string) bool {
			return own(d) && d != module+"/scenarios/lab" && d != module+"/bank" && d != module+"/scenarios/lab/mistakes"
		}, "a renderer draws the events it is given, and reads nothing else"},
		{module + "/scenarios/lab/mistakes/onpurpose", func(d string) bool {
			return own(d) && d != module+"/bank" && d != module+"/bank/api" && d != module+"/idem" && d != module+"/scenarios/lab/mistakes"
		},
			"the servers made wrong on purpose are the bank's API with one mistake of the catalogue: they need nothing of the lab"},
		{module + "/scenarios/practice", func(d string) bool {
			return d == module+"/scenarios/lab/mistakes/onpurpose" || strings.HasPrefix(d, module+"/cmd")
		},
			"practice checks the learner's work against the lessons, not against broken servers"},
	}
	// The servers made wrong on purpose are run by the mistakes' stories and
	// by bank serve --mistake, and by nothing else.
	for pkg, deps := range imports {
		if slices.Contains(deps, module+"/scenarios/lab/mistakes/onpurpose") && strings.TrimSuffix(pkg, "_test") != module+"/scenarios" && pkg != module+"/cmd/bank" && !strings.HasPrefix(pkg, module+"/scenarios/lab/mistakes/onpurpose") {
			t.Errorf("%s imports scenarios/lab/mistakes/onpurpose: only the mistakes and bank serve --mistake run broken servers", pkg)
		}
	}
	for _, r := range rules {
		for _, d := range imports[r.pkg] {
			if r.banned(d) {
				t.Errorf("%s imports %s: %s", r.pkg, d, r.why)
			}
		}
	}
	// The command's own packages, each with every package of ours it may
	// import (its tests included): a new one, or a new import, is written
	// down here.
	const internal = module + "/cmd/bank/internal/"
	commandRules := map[string]struct {
		may []string
		why string
	}{
		"attempt": {[]string{"scenarios/practice", "scenarios/lab/render", "cmd/bank/internal/program", "cmd/bank/internal/jsonshape", "cmd/bank/internal/exitcode"},
			"an attempt is practice's findings told as text (folded as render folds) or as jsonshape's bank.exercise/v1, with program's result for a program that did not finish"},
		"bench": {[]string{"bank", "bank/audit", "bank/client", "scenarios/lab/procs", "idem"},
			"bench drives bank serve and pgbench with the bank's and idem's own SQL, and checks the books with audit"},
		"buildinfo": {nil, "which build this is comes from the linker and the Go toolchain only"},
		"clientgrade": {[]string{"cmd/bank/internal/grade/verdict", "bank", "bank/api", "bank/audit", "idem", "cmd/bank/internal/grade", "cmd/bank/internal/pace", "cmd/bank/internal/arrival", "scenarios/lab/procs", "scenarios/lab/mistakes",
			"scenarios/lab/pgserver", "scenarios/lab", "scenarios/lab/render", "cmd/bank/internal/exitcode", "cmd/bank/internal/names", "cmd/bank/internal/grade/starter", "cmd/bank/internal/grade/card", "cmd/bank/internal/grade/gradecmd", "cmd/bank/internal/grade/record"},
			"clientgrade serves the bank itself (api, idem) behind its front, runs the learner's client through procs, times its attempts by arrival, checks the books with audit, names the catalogue's mistakes, and writes grade's Report (folded as render folds, each check's diagram the lab's events in render's Recording, made by record's Timeline), its card and files written by card; its command is gradecmd's, its errors exitcode's, and its starters are written by starter's Kit"},
		"hookgrade": {[]string{"cmd/bank/internal/grade/verdict", "bank", "cmd/bank/internal/grade", "cmd/bank/internal/grade/card", "cmd/bank/internal/grade/gradecmd", "cmd/bank/internal/grade/starter", "cmd/bank/internal/served", "cmd/bank/internal/grade/record", "scenarios/lab", "scenarios/lab/render", "cmd/bank/internal/witness",
			"cmd/bank/internal/pace", "cmd/bank/internal/exitcode", "scenarios/lab/mistakes", "scenarios/lab/pgserver"},
			"hookgrade runs the learner's consumer through served on the bank's seed, reads what it wrote and holds its transactions with the witness, names the catalogue's mistakes and writes grade's Report, each check's diagram drawn on record's Timeline; its command is gradecmd's, its starters starter's Kit"},
		"grade/verdict": {[]string{"cmd/bank/internal/grade", "scenarios/lab/mistakes"},
			"a check's line is grade's Result, its mistakes the catalogue's"},
		"grade/gradecmd": {[]string{"cmd/bank/internal/grade", "cmd/bank/internal/grade/card", "cmd/bank/internal/grade/starter", "cmd/bank/internal/exitcode", "cmd/bank/internal/names", "cmd/bank/internal/served", "scenarios/lab/pgserver"},
			"a grader's command is grade's flags and card's outputs around the grader's own run; its starters are starter's Kits, its errors exitcode's with names' suggestions, a program that would not start served's StartError"},
		"exitcode": {[]string{"bank", "scenarios/lab/pgserver", "scenarios/lab/procs"},
			"an exit code is read from the error alone: PostgreSQL's and the children's failures are the environment's"},
		"grade": {[]string{"bank", "bank/audit", "bank/client", "scenarios/lab/procs", "scenarios/lab/mistakes", "cmd/bank/internal/torture", "cmd/bank/internal/grade/record", "scenarios/lab/render",
			"scenarios/lab/pgserver", "scenarios/lab/pgserver/pgtest", "cmd/bank/internal/witness", "cmd/bank/internal/pace", "cmd/bank/internal/served"},
			"grade runs the learner's server (started by served), sends keys as the client does (bare or quoted), checks the books, reuses torture's run, names the catalogue's mistakes, has record keep what happened, each check's render.Recording, and reads what the server wrote from the witness (its tests grade bank serve on the tests' PostgreSQL)"},
		"grade/card": {[]string{"cmd/bank/internal/grade", "bank", "scenarios/lab/render", "scenarios/lab", "scenarios/lab/pgserver/pgtest", "cmd/bank/internal/htmlpage", "cmd/bank/internal/outfile", "cmd/bank/internal/exitcode"},
			"the card, the contract and the workflows are written from grade's Report and list of checks alone, the diagrams drawn by render, the --junit and --html files through htmlpage and outfile (a bad path a usage error), the contract's accounts the bank's seed (its tests make a recording of the lab's events, and say through pgtest.Skip when yamllint is missing)"},
		"grade/record": {[]string{"bank", "scenarios/lab", "scenarios/lab/render"},
			"a check's recording is the lab's events in render's Recording, its sums written as the bank writes them; it knows nothing of the grader, which gives it what it must know of the lesson's API"},
		"grade/starter": {[]string{"scenarios/lab/pgserver/pgtest", "cmd/bank/internal/exitcode", "cmd/bank/internal/names"},
			"the starters are files written from the contract, their --starter errors exitcode's with names' suggestions; only their tests reach further, grading them with the bank binary on pgtest's caches"},
		"htmlpage": {[]string{"cmd/bank/internal/exitcode", "cmd/bank/internal/outfile", "scenarios/lab/render"},
			"the --html page is render's drawing of the runs, written by outfile; a bad path is a usage error"},
		"payoutgrade": {[]string{"cmd/bank/internal/grade/verdict", "bank", "cmd/bank/internal/grade", "cmd/bank/internal/arrival", "cmd/bank/internal/grade/card", "cmd/bank/internal/grade/gradecmd", "cmd/bank/internal/grade/starter", "cmd/bank/internal/witness", "cmd/bank/internal/served", "cmd/bank/internal/grade/record", "scenarios/lab", "scenarios/lab/render",
			"cmd/bank/internal/pace", "cmd/bank/internal/exitcode", "scenarios/lab/mistakes", "scenarios/lab/pgserver", "scenarios/lab/procs"},
			"payoutgrade runs the learner's worker through procs on the bank's seed and its outbox, plays the rail (its requests timed by arrival), holds and reads the worker's writes with the witness, tells its sessions by the sockets served reads, names the catalogue's mistakes and writes grade's Report, each check's diagram drawn on record's Timeline; its command is gradecmd's"},
		"hops": {[]string{"cmd/bank/internal/grade", "cmd/bank/internal/outfile", "cmd/bank/internal/exitcode", "scenarios/lab/render"},
			"the learner's progress is grade's Reports kept by outfile, said folded as render folds; its errors exitcode's"},
		"httpserve": {nil, "a server's lifetime is net/http's business only"},
		"labweb": {[]string{"scenarios/lab/render", "scenarios/lab/pgserver/pgtest", "scenarios/lab/procs"},
			"labweb serves the runs' pictures, drawn by render (its browser tests start bank lab)"},
		"names": {[]string{"cmd/bank/internal/exitcode"},
			"names knows no lesson: the commands give it their names; a wrong one is a usage error"},
		"outfile": {nil, "writing a file safely needs nothing of ours"},
		"program": {[]string{"scenarios/lab/procs", "cmd/bank/internal/pace"},
			"program runs the learner's program through procs, for as long as pace allows, and knows nothing of exercises"},
		"quiz": {[]string{"scenarios/practice", "scenarios/lab/render", "scenarios/lab/pgserver", "scenarios/lab/pgserver/pgtest", "cmd/bank/internal/jsonshape", "cmd/bank/internal/term"},
			"a sitting asks practice's questions on a terminal (term reads a line, or Ctrl-C) and reads their answers from real runs; --json is jsonshape's convention"},
		"jsonshape": {[]string{"scenarios/lab/render"},
			"the shapes of --json are data; the manual they make is folded as render folds text"},
		"term":    {nil, "a terminal and its width are the operating system's business only"},
		"pace":    {nil, "how busy the machine is is the operating system's business only"},
		"arrival": {nil, "when the kernel got a request is the operating system's business only"},
		"served": {[]string{"cmd/bank/internal/pace", "scenarios/lab/procs"},
			"a learner's program that listens is started through procs, its limits following pace"},
		"witness": {[]string{"scenarios/lab/pgserver", "scenarios/lab/pgserver/pgtest"},
			"the witness is SQL and its reader: it knows no lesson (its tests run on pgtest's PostgreSQL)"},
		"torture": {[]string{"bank/audit", "bank/client", "cmd/bank/internal/witness", "scenarios/lab", "scenarios/lab/procs", "scenarios/lab/mistakes"},
			"torture sends as the client does, runs bank serve replicas (started as the lab starts them), checks the books and names what it saw from the catalogue of mistakes"},
	}
	for pkg, deps := range imports {
		name, ok := strings.CutPrefix(strings.TrimSuffix(pkg, "_test"), internal)
		if !ok || strings.HasSuffix(name, ".test") {
			continue
		}
		rule, ok := commandRules[name]
		if !ok {
			t.Errorf("%s has no dependency rule: write down what it may import", pkg)
			continue
		}
		for _, d := range slices.Compact(slices.Sorted(slices.Values(deps))) { // a package and its test variant list the same ones
			if !own(d) || d == internal+name {
				continue
			}
			if !slices.Contains(rule.may, strings.TrimPrefix(d, module+"/")) {
				t.Errorf("%s imports %s: %s", pkg, d, rule.why)
			}
		}
	}
	for pkg, deps := range imports {
		for _, d := range deps {
			if strings.HasPrefix(d, "github.com/fergusstrange/embedded-postgres") && pkg != module+"/scenarios/lab/pgserver" && own(pkg) {
				t.Errorf("%s imports embedded-postgres: only scenarios/lab/pgserver may own the server", pkg)
			}
		}
	}
	allowed := []string{
		"github.com/spf13/cobra", "github.com/spf13/pflag", "github.com/inconshreveable/mousetrap",
		"github.com/jackc/", "github.com/fergusstrange/embedded-postgres", "github.com/lib/pq", "github.com/xi2/xz",
		"github.com/fatih/color", "github.com/mattn/go-isatty", "github.com/mattn/go-colorable",
		"golang.org/x/sys", "golang.org/x/text", "golang.org/x/sync",
		// x/term reads a terminal's width in one call on Unix and Windows
		// (the Go project's own; it needs nothing but x/sys).
		"golang.org/x/term",
		// chromedp drives headless Chromium in bank lab's browser tests
		// (tests only); go-json-experiment is its JSON codec.
		"github.com/chromedp/", "github.com/go-json-experiment/json",
		// yaml.v3 builds the CI workflows bank grade --workflow writes, and
		// parses them in their tests (it was in the module graph through
		// testify).
		"gopkg.in/yaml.v3",
	}
	for pkg := range imports {
		if !strings.Contains(strings.SplitN(pkg, "/", 2)[0], ".") || own(pkg) || pkg == module {
			continue // standard library, or ours
		}
		ok := false
		for _, a := range allowed {
			ok = ok || strings.HasPrefix(pkg, a)
		}
		if !ok {
			t.Errorf("%s is not on the dependency allow-list: add it only with a reason in the commit message", pkg)
		}
	}
}

// TestChildrenThroughOneSpec: the commands, the lab and the server owner
// start their children through one procs.Spec (Start, StartReady or Run),
// which ties each to the lab and keeps its output bounded; a bare
// exec.Command would escape both. scenarios/lab/procs itself builds the command,
// and pgtest, the tests' own tooling, runs cp and go build for go test.
func TestChildrenThroughOneSpec(t *testing.T) {
	var offenders []string
	for _, dir := range []string{"../cmd", "../scenarios", "."} {
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && (path == filepath.Join("..", "scenarios", "lab", "procs") || path == filepath.Join("..", "scenarios", "lab", "pgserver", "pgtest")) {
				return filepath.SkipDir
			}
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(src), "\n") {
				if strings.Contains(line, "exec.Command(") || strings.Contains(line, "exec.CommandContext(") {
					offenders = append(offenders, fmt.Sprintf("%s:%d", path, i+1))
				}
			}
			return nil
		})
	}
	if len(offenders) > 0 {
		t.Errorf("children started outside scenarios/lab/procs (use a procs.Spec): %v", offenders)
	}
}
