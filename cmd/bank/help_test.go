package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/cmd/bank/help"
	"github.com/zudojs/bank/cmd/bank/internal/clientgrade"
	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/scenarios"
	"github.com/zudojs/bank/scenarios/lab/mistakes/onpurpose"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
	"github.com/zudojs/bank/scenarios/practice"
)

// TestHelpTopicsAreWrapped: every topic fits a terminal of 80 columns,
// starts with its one-line summary and a blank line, and is plain text.
func TestHelpTopicsAreWrapped(t *testing.T) {
	t.Parallel()
	for _, tp := range help.Topics() {
		lines := strings.Split(tp.Text, "\n")
		if !strings.HasSuffix(tp.Text, "\n") || strings.HasSuffix(tp.Text, "\n\n") {
			t.Errorf("%s: the text must end with exactly one newline", tp.Name)
		}
		if tp.Summary == "" || len(lines) < 3 || lines[1] != "" {
			t.Errorf("%s: want a one-line summary, a blank line, then the text", tp.Name)
		}
		// The list in bank help puts the summary after two spaces, the
		// name column and two more: it must fit 80 columns there too.
		if n := 4 + len("environment") + utf8.RuneCountInString(tp.Summary); n > 80 {
			t.Errorf("%s: the summary makes a %d-column line in bank help", tp.Name, n)
		}
		for i, l := range lines {
			if n := utf8.RuneCountInString(l); n > 80 {
				t.Errorf("help/%s.txt:%d is %d columns wide: %q", tp.Name, i+1, n, l)
			}
			if strings.ContainsAny(l, "\t\r") || strings.TrimRight(l, " ") != l {
				t.Errorf("help/%s.txt:%d has a tab, a carriage return or trailing spaces", tp.Name, i+1)
			}
		}
	}
}

// TestHelpTopicsAreAllListed: every file in help/ is a topic bank help
// lists, and every listed topic has its file.
func TestHelpTopicsAreAllListed(t *testing.T) {
	t.Parallel()
	entries, err := fs.ReadDir(help.Files, ".")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, strings.TrimSuffix(e.Name(), ".txt"))
	}
	slices.Sort(files)
	listed := help.Names()
	slices.Sort(listed)
	if !slices.Equal(files, listed) {
		t.Fatalf("help/ holds %v, topicOrder lists %v", files, listed)
	}
}

// TestHelpListsCommandsAndTopics: bank help, and bank --help, list every
// command and every topic with its summary.
func TestHelpListsCommandsAndTopics(t *testing.T) {
	t.Parallel()
	root := (&app{}).rootCommand()
	for _, args := range [][]string{{"help"}, {"--help"}} {
		r := cli(t, nil, args...)
		if r.code != exitcode.OK || r.stderr != "" {
			t.Fatalf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
		for _, c := range root.Commands() {
			if c.IsAvailableCommand() && !strings.Contains(r.stdout, "  "+c.Name()+" ") {
				t.Errorf("%v does not list the command %s", args, c.Name())
			}
		}
		for _, tp := range help.Topics() {
			if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(tp.Name) + ` +` + regexp.QuoteMeta(tp.Summary) + `$`).MatchString(r.stdout) {
				t.Errorf("%v does not list the topic %s with its summary", args, tp.Name)
			}
		}
	}
}

// TestHelpTopicPrintsIt: bank help TOPIC prints the topic, whole, even
// where a command has the same name (bank grade --help has the flags).
func TestHelpTopicPrintsIt(t *testing.T) {
	t.Parallel()
	for _, tp := range help.Topics() {
		r := cli(t, nil, "help", tp.Name)
		if r.code != exitcode.OK || r.stdout != tp.Text || r.stderr != "" {
			t.Errorf("help %s: exit %d, stderr %q, stdout starts %.60q", tp.Name, r.code, r.stderr, r.stdout)
		}
	}
	if r := cli(t, nil, "grade", "--help"); r.code != exitcode.OK || !strings.Contains(r.stdout, "--start-timeout") {
		t.Errorf("grade --help lost the flags: %+v", r)
	}
}

// TestHelpSuggestsAcrossCommandsAndTopics: an unknown name gets exit 2,
// one line, and the nearest command or topic.
func TestHelpSuggestsAcrossCommandsAndTopics(t *testing.T) {
	t.Parallel()
	for typed, want := range map[string]string{
		"nosuch":     `no help for "nosuch": it is neither a command nor a topic; bank help lists both`,
		"exit-code":  "(did you mean exit-codes?)",
		"standard":   "(did you mean standards?)",
		"torure":     "(did you mean torture?)",
		"enviroment": "(did you mean environment?)",
		"scenari":    "(did you mean scenario?)",
	} {
		r := cli(t, nil, "help", typed)
		if r.code != exitcode.Usage || !strings.Contains(r.stderr, want) || r.stdout != "" {
			t.Errorf("help %s: exit %d, stderr %q; want exit 2 and %q", typed, r.code, r.stderr, want)
		}
		oneLine(t, r)
	}
	// A topic typed as a command says where it is.
	r := cli(t, nil, "scenarios")
	if r.code != exitcode.Usage || !strings.Contains(r.stderr, "scenarios is a help topic, not a command: bank help scenarios (or did you mean bank scenario?)") {
		t.Errorf("bank scenarios: %+v", r)
	}
	oneLine(t, r)
}

// TestHelpTopicsNameWhatTheyDescribe: the topics that list the lab's
// scenarios, mistakes, exercises, grade checks, API error codes, exit
// codes and environment variables name every one the code has, so a new
// one cannot go undocumented.
func TestHelpTopicsNameWhatTheyDescribe(t *testing.T) {
	t.Parallel()
	text := func(name string) string {
		tp, ok := help.Lookup(name)
		if !ok {
			t.Fatalf("no topic %s", name)
		}
		return tp.Text
	}
	mustName := func(topic string, names []string) {
		t.Helper()
		body := text(topic)
		for _, n := range names {
			if !regexp.MustCompile(`(^|[\s(,])` + regexp.QuoteMeta(n) + `([\s),.:;]|$)`).MatchString(body) {
				t.Errorf("bank help %s does not name %s", topic, n)
			}
		}
	}
	mustName("scenarios", scenarios.Names())
	var mistakes []string
	for _, m := range scenarios.Mistakes {
		mistakes = append(mistakes, m.Name)
	}
	mustName("mistakes", append(mistakes, onpurpose.Names()...))
	mustName("exercise", practice.ExerciseNames())
	mustName("grade", grade.Names())
	mustName("grade", clientgrade.Names())
	mustName("serve", apiErrorCodes(t))

	// One row a code in the table of exit-codes, and no code the table
	// has that package exitcode has not.
	codes := []int{exitcode.OK, exitcode.No, exitcode.Usage, exitcode.Env, exitcode.Unknown, exitcode.Internal, exitcode.Interrupted}
	var rows []string
	for _, m := range regexp.MustCompile(`(?m)^  (\d+) +\S`).FindAllStringSubmatch(text("exit-codes"), -1) {
		rows = append(rows, m[1])
	}
	var want []string
	for _, c := range codes {
		want = append(want, strconv.Itoa(c))
	}
	if !slices.Equal(rows, want) {
		t.Errorf("bank help exit-codes has rows for %v; package exitcode has %v", rows, want)
	}

	mustName("environment", environmentVariables(t))
}

// apiErrorCodes are the error codes bank serve can answer with: every
// problem type it documents (api.ProblemDocs, which bank/api's own test
// holds to every code its handlers, idem and the bank refuse with).
func apiErrorCodes(t *testing.T) []string {
	t.Helper()
	var codes []string
	for _, d := range api.ProblemDocs {
		codes = append(codes, d.Code)
	}
	if len(codes) < 20 {
		t.Fatalf("only %d error codes (%v): has the table moved?", len(codes), codes)
	}
	return codes
}

// environmentVariables are the variables the tree reads (Getenv,
// LookupEnv, the app's getenv) and every BANK_ name it spells, in Go and
// in the CI scripts.
func environmentVariables(t *testing.T) []string {
	t.Helper()
	read := regexp.MustCompile(`(?:Getenv|LookupEnv|getenv)\("([A-Z_]+)"\)`)
	bankName := regexp.MustCompile(`\bBANK_[A-Z_]*[A-Z]_?`)
	var names []string
	add := func(n string) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	err := pgtest.WalkModule("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".go") || strings.HasPrefix(path, filepath.Join("../..", ".ci"))) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range read.FindAllStringSubmatch(string(src), -1) {
			add(m[1])
		}
		for _, m := range bankName.FindAllString(string(src), -1) {
			add(m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names, "BANK_CACHE_DIR") || !slices.Contains(names, "DATABASE_URL") {
		t.Fatalf("found %v: has the source moved?", names)
	}
	return names
}

// TestReadmeSendsToTheTopics: the README's table of topics names each
// topic bank help has, and no other; the run it quotes is the golden
// transcript's, so the quote cannot drift from what the lab prints.
func TestReadmeSendsToTheTopics(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var named []string
	for _, row := range regexp.MustCompile("(?m)^\\| (`[a-z-]+`(?:, `[a-z-]+`)*) \\|").FindAllStringSubmatch(string(readme), -1) {
		for _, n := range strings.Split(row[1], ", ") {
			named = append(named, strings.Trim(n, "`"))
		}
	}
	slices.Sort(named)
	all := help.Names()
	slices.Sort(all)
	if !slices.Equal(named, all) {
		t.Errorf("the README's table names the topics %v; bank help has %v", named, all)
	}
	quote := regexp.MustCompile("(?s)`bank scenario lost-response` ends like this.*?```\n(.*?)```").FindSubmatch(readme)
	golden, err := os.ReadFile("../../testdata/scenarios/lost-response.golden")
	if err != nil {
		t.Fatal(err)
	}
	if quote == nil || !strings.HasSuffix(strings.TrimRight(string(golden), "\n"), strings.TrimRight(string(quote[1]), "\n")) {
		t.Errorf("the README's quote of lost-response is not how its golden transcript ends")
	}
}
