// Package attempt tells a learner how an attempt at bank exercise went:
// a line per check (or bank.exercise/v1 with --json), the finding for a
// program that did not run to the end, the exercise's task, and its hints,
// one more each time, remembered in the user's cache.
package attempt

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/jsonshape"
	"github.com/zudojs/bank/cmd/bank/internal/program"
	"github.com/zudojs/bank/scenarios/lab/render"
	"github.com/zudojs/bank/scenarios/practice"
)

// Print prints a check a line, folded at 80 columns under the
// check's words.
func Print(w io.Writer, attempt practice.Attempt, color bool) {
	for _, f := range attempt.Findings {
		mark := "ok     "
		if !f.Passed {
			mark = "NOT YET"
		}
		line := "  " + mark + "  " + f.What
		if f.Detail != "" {
			line += ": " + f.Detail
		}
		for i, l := range render.Fold(line, practice.Width, strings.Repeat(" ", 4+len(mark))) {
			if i == 0 && !f.Passed && color {
				l = strings.Replace(l, mark, "\x1b[31m"+mark+"\x1b[0m", 1)
			}
			fmt.Fprintln(w, l)
		}
	}
}

// Task says, on w, what the exercise checks and how to have it checked.
func Task(w io.Writer, ex *practice.Exercise) {
	fmt.Fprintln(w, ex.Prompt(practice.ProgramMode, practice.SQLMode))
	fmt.Fprintf(w, "check yours with:\n  bank exercise %s -- CMD [ARGS…]\n      your program; DATABASE_URL is in its environment\n", ex.Name)
	if ex.IsSQL() {
		fmt.Fprintf(w, "  bank exercise %s --sql FILE\n      your statement, with $1 and $2 bound\n", ex.Name)
	}
	fmt.Fprintf(w, "stuck? bank exercise %s --hint\n", ex.Name)
}

// Unfinished is the finding for a program that did not run to the end.
func Unfinished(r *program.Result) *practice.Finding {
	why := ""
	switch {
	case r.TimedOut:
		why = fmt.Sprintf("it was stopped after %s: does it wait for something, or leave its database connection open (db.end(), conn.close())?", r.Limit)
	case r.Exit != 0:
		why = fmt.Sprintf("it exited with status %d", r.Exit)
		if r.Stderr != "" {
			why += "; its standard error is below"
		}
	default:
		return nil
	}
	return &practice.Finding{What: "your program runs to the end", Detail: why}
}

// JSON prints a checked attempt as bank.exercise/v1, and exits
// as the text does: 0 passed, 1 not yet.
func JSON(w io.Writer, ex *practice.Exercise, mode practice.Mode, attempt practice.Attempt, run *program.Result) error {
	type check struct {
		Check   string `json:"check"`
		Verdict string `json:"verdict"`
		Detail  string `json:"detail,omitempty"`
	}
	out := struct {
		Schema   string  `json:"schema"`
		Exercise string  `json:"exercise"`
		Mode     string  `json:"mode"`
		Checks   []check `json:"checks"`
		Stderr   string  `json:"stderr,omitempty"`
		Verdict  string  `json:"verdict"`
	}{Schema: "bank.exercise/v1", Exercise: ex.Name, Mode: "program", Verdict: render.PassOrFail(attempt.Passed())}
	if mode == practice.SQLMode {
		out.Mode = "sql"
	}
	for _, f := range attempt.Findings {
		out.Checks = append(out.Checks, check{f.What, render.PassOrFail(f.Passed), f.Detail})
	}
	if run != nil && run.Stderr != "" && (!attempt.Passed() || Unfinished(run) != nil) {
		out.Stderr = run.StderrShown()
	}
	if err := jsonshape.Encode(w, &out, false); err != nil {
		return err
	}
	if !attempt.Passed() {
		return exitcode.Silent{Code: exitcode.No}
	}
	return nil
}

// hintFile is where the lab remembers how many of an exercise's hints
// were shown: the user's cache directory, one file per exercise.
func hintFile(ex *practice.Exercise) (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "bank", "hints", ex.Name), nil
}

// NextHint shows one hint, on w: the first the first time, the next one each
// time after, and the last again once all were shown.
func NextHint(w io.Writer, ex *practice.Exercise) error {
	state, err := hintFile(ex)
	shown := 0
	if err != nil {
		fmt.Fprintf(w, "(the lab has nowhere to remember the hints you saw: %v; set HOME)\n", err)
	} else if raw, err := os.ReadFile(state); err == nil {
		shown, _ = strconv.Atoi(strings.TrimSpace(string(raw)))
	}
	next := shown + 1
	if next > len(ex.Hints) {
		next = len(ex.Hints)
		fmt.Fprintf(w, "you have seen all %d hints; the last again:\n", len(ex.Hints))
	}
	fmt.Fprintf(w, "hint %d of %d:\n%s\n", next, len(ex.Hints), practice.Fold(ex.Hints[next-1], "  "))
	if next == len(ex.Hints) {
		fmt.Fprintf(w, "that was the last hint; the lab's own solution: bank exercise %s --solution\n", ex.Name)
	} else {
		fmt.Fprintf(w, "another: bank exercise %s --hint\n", ex.Name)
	}
	if state != "" {
		if err := os.MkdirAll(filepath.Dir(state), 0o700); err == nil {
			_ = os.WriteFile(state, []byte(strconv.Itoa(next)+"\n"), 0o600)
		}
	}
	return nil
}

// Indent indents every line of s by two spaces.
func Indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }
