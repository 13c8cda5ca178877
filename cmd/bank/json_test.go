package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zudojs/bank/cmd/bank/help"
	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/jsonshape"
)

var updateTopic = flag.Bool("update", false, "rewrite help/json.txt from the documented shapes")

// matchesShape fails the test unless out, a command's --json output, has
// the shape the manual documents under schema (bank help json). The
// tests that read a command's --json call it: scenario and mistake (one
// and all), grade, torture, quiz, bench, exercise, send, status, keys gc.
func matchesShape(t *testing.T, schema string, out []byte) {
	t.Helper()
	if err := jsonshape.Validate(schema, out); err != nil {
		t.Errorf("the output does not have the documented shape %s (bank help json): %v\n%s", schema, err, out)
	}
}

// TestJSONTopic: bank help json is the documented shapes, as written by
// jsonshape.Manual (go test ./cmd/bank -run TestJSONTopic -update).
func TestJSONTopic(t *testing.T) {
	t.Parallel()
	want := jsonshape.Manual()
	if *updateTopic {
		if err := os.WriteFile(filepath.Join("help", "json.txt"), []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return // the binary embeds the file as it was: the next run checks it
	}
	// The topic as the binary embeds it (the tests may run from any
	// directory, as .ci/as-learner runs them).
	if got, ok := help.Lookup("json"); !ok || got.Text != want {
		t.Fatalf("help/json.txt is not what jsonshape.Manual writes: go test ./cmd/bank -run TestJSONTopic -update, and read the diff")
	}
}

// TestExerciseJSON: bank exercise --json prints the checks of an attempt
// as one object, passed or not, and nothing else; it is refused where
// nothing is checked.
func TestExerciseJSON(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		args    []string
		code    int
		verdict string
	}{
		{"should-retry, right", []string{"exercise", "should-retry", "--json", "--", "sh", learnerFile(t, "r.sh", retryRight)}, exitcode.OK, `"verdict":"pass"}`},
		{"should-retry, retries 422", []string{"exercise", "should-retry", "--json", "--", "sh", learnerFile(t, "r2.sh", retry422)}, exitcode.No, `"verdict":"fail"}`},
		{"cleanup, a statement", []string{"exercise", "cleanup", "--json", "--sql", learnerFile(t, "c.sql", lessonDelete)}, exitcode.OK, `"mode":"sql"`},
		{"a program that fails", []string{"exercise", "cleanup", "--json", "--", "sh", learnerFile(t, "crash.sh", crashes)}, exitcode.No, `"stderr":"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := cli(t, nil, c.args...)
			if r.code != c.code || strings.Count(r.stdout, "\n") != 1 || !strings.Contains(r.stdout, c.verdict) {
				t.Fatalf("exit %d, want %d, one line with %s:\n%s%s", r.code, c.code, c.verdict, r.stdout, r.stderr)
			}
			matchesShape(t, "bank.exercise/v1", []byte(r.stdout))
		})
	}
	r := cli(t, nil, "exercise", "ship", "--json")
	if r.code != exitcode.Usage || !strings.Contains(r.stderr, "--json reports a check of yours") {
		t.Errorf("exercise ship --json, with nothing to check: exit %d, %q", r.code, r.stderr)
	}
	oneLine(t, r)
}
