package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/scenarios"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
	"github.com/zudojs/bank/scenarios/practice"
)

// lessonWide are the lesson's own lines wider than 80 columns, which the
// lab prints whole, each story saying once, just before the first, that
// it is the lesson's: PostgreSQL's message as naive.js and atomic.js
// print it, and the figure of lost-response's --explain.
func lessonWide() map[string]bool {
	wide := map[string]bool{`failed: insert or update on table "transfers" violates foreign key constraint "transfers_to_account_fkey"`: true}
	for _, note := range scenarios.LostResponse.Explain {
		for l := range strings.SplitSeq(note, "\n") {
			if strings.HasPrefix(l, " ") {
				wide["  "+l] = true
			}
		}
	}
	return wide
}

// TestEverythingFoldsAt80: no line of scenario all, mistake all, every
// scenario's and mistake's --diagram and --explain, every exercise's
// prompt and solution, bank grade --contract and the report card of a
// failing server (with its progress lines) is wider than 80 columns,
// except the lesson's own lines, which a story introduces once as the
// lesson's, kept whole. Before, the card went to 318 columns, the
// contract to 104, the exercises to 106, and the lesson's lines came with
// no word why.
func TestEverythingFoldsAt80(t *testing.T) {
	t.Parallel()
	wide := lessonWide()
	runs := [][]string{{"scenario", "all"}, {"mistake", "all"}, {"grade", "--contract"}}
	for _, sc := range scenarios.All {
		runs = append(runs, []string{"scenario", sc.Name, "--diagram"}, []string{"scenario", sc.Name, "--explain"})
	}
	for _, m := range scenarios.MistakeNames() {
		runs = append(runs, []string{"mistake", m, "--diagram"}, []string{"mistake", m, "--explain"})
	}
	for _, ex := range practice.Exercises {
		runs = append(runs, []string{"exercise", ex.Name}, []string{"exercise", ex.Name, "--solution"})
	}
	// A failing server: bank serve without keys, on three checks (each
	// failing with evidence, JSON bodies among it).
	card := []string{"grade", "--only", "lost-response,crash-on-store,pause", "--", bankBinary(t), "serve", "--mistake", "no-keys"}
	runs = append(runs, card)
	for _, args := range runs {
		cmd := exec.Command(bankBinary(t), args...)
		cmd.Env = append(os.Environ(), "BANK_CACHE_DIR="+pgtest.CacheDir(t), "DATABASE_URL="+pgtest.AdminURL(), "HOME="+t.TempDir())
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		want := exitcode.OK
		if args[0] == "grade" && args[1] == "--only" {
			want = exitcode.No
		}
		if code := exitOf(err); code != want {
			t.Errorf("%v: exit %d, want %d: %s", args, code, want, stderr.String())
			continue
		}
		for name, out := range map[string]string{"standard output": stdout.String(), "standard error": stderr.String()} {
			said := false // the story said its wide lines are the lesson's
			for l := range strings.SplitSeq(out, "\n") {
				switch n := utf8.RuneCountInString(l); {
				case strings.HasPrefix(l, "== "):
					said = false
				case strings.Contains(l, "the lesson's own, word for word, kept whole") || strings.Contains(l, "the lesson's figure, kept whole"):
					said = true
				case n > 80 && !((wide[l] || wide[strings.TrimLeft(l, " ")]) && said): // a diagram indents it
					t.Errorf("%v, %s: a line of %d columns (the lesson's, said: %t): %q", args, name, n, said, l)
				}
			}
		}
	}
}
