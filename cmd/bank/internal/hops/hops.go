// Package hops is the learner's progress through the outline's hops: the
// places where one key keeps money moving once, as the lab grades them on
// the learner's own code (the server, the client, the webhook consumer,
// and the payout worker). Each whole grade is recorded, the
// latest of each hop kept, in a small JSON file of the learner's state
// folder; bank grade hops reads it and says which hops pass, which are
// still to do, and the command for the next.
package hops

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/cmd/bank/internal/outfile"
	"github.com/zudojs/bank/scenarios/lab/render"
)

// Hop is one hop of the outline, as the lab grades it.
type Hop struct {
	Of    string   // what is graded: server, client, webhook, payout
	Title string   // the hop, in the outline's words
	Start []string // the commands to start with, while nothing is graded; the story, when not graded
	Ready bool     // the lab grades it on the learner's code
}

// Outline is the hops, in the order a payment crosses them.
var Outline = []Hop{
	{"server", "the public API: a transfer made once, whatever the retries", []string{"bank grade --contract", "bank grade --starter node my-server"}, true},
	{"client", "the app: one key per tap, kept with the draft, retried safely", []string{"bank grade client --contract", "bank grade client --starter node my-client"}, true},
	{"webhook", "inbound webhooks: each payment credited once", []string{"bank grade webhook --contract", "bank grade webhook --starter node my-consumer"}, true},
	{"payout", "outbound calls to the rails: each payout paid once", []string{"bank grade payout --contract", "bank grade payout -- node worker.mjs"}, true},
	{"ledger", "the ledger: one key from the request to its rows", []string{"bank scenario ledger-key"}, false},
	{"events", "event consumers: each event applied once", []string{"bank scenario consumer"}, false},
}

// Record is one whole grade of a hop.
type Record struct {
	Of      string    `json:"of"`
	Command []string  `json:"command"`
	Verdict string    `json:"verdict"` // pass, fail, unknown
	Passed  int       `json:"passed"`  // checks passed
	Checks  int       `json:"checks"`  // checks run
	At      time.Time `json:"at"`
}

// Path is the file the grades are kept in: $XDG_STATE_HOME/bank/grades.json,
// else ~/.local/state/bank/grades.json ("" when there is neither).
func Path(getenv func(string) string) string {
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "bank", "grades.json")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "state", "bank", "grades.json")
	}
	return ""
}

// Load reads the grades kept at path: none when there is no file, or one
// that is not a regular file of the learner's own (a link, or a file
// others may write, is never trusted).
func Load(path string) (map[string]Record, error) {
	recs := map[string]Record{}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return recs, nil
	}
	if err != nil {
		return recs, err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o022 != 0 {
		return recs, fmt.Errorf("%s is not a file of yours alone: look at it, then delete it", path)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return recs, err
	}
	if err := json.Unmarshal(raw, &recs); err != nil {
		return map[string]Record{}, fmt.Errorf("%s is damaged (%v): delete it, and grade again", path, err)
	}
	return recs, nil
}

// Save keeps r as its hop's latest grade, in the file at path, written
// whole or not at all.
func Save(path string, r Record) error {
	recs, err := Load(path)
	if err != nil {
		return err
	}
	recs[r.Of] = r
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := outfile.Create(path, ".bank-grades-*.json")
	if err != nil {
		return err
	}
	defer f.Discard()
	raw, _ := json.MarshalIndent(recs, "", "  ")
	if _, err := f.Write(append(raw, '\n')); err != nil {
		return err
	}
	return f.Commit()
}

// Print writes the learner's progress: each hop, its latest grade, and
// the command to run next, folded to 80 columns.
func Print(w io.Writer, recs map[string]Record) {
	say := func(indent, s string) {
		for _, l := range render.Fold(indent+s, render.Width, indent+"  ") {
			fmt.Fprintln(w, l)
		}
	}
	fmt.Fprintln(w, "The outline's hops, as you have graded them:")
	var next []string
	for _, h := range Outline {
		fmt.Fprintln(w)
		say("  ", h.Of+": "+h.Title)
		r, graded := recs[h.Of]
		switch {
		case !h.Ready:
			say("    ", "not graded on your code; the lab tells its story: "+strings.Join(h.Start, ", "))
		case !graded:
			say("    ", "not graded yet; start with:")
			for _, c := range h.Start {
				say("      ", c)
			}
			if next == nil {
				next = h.Start
			}
		default:
			again := strings.Join(append(tool(h.Of), append([]string{"--"}, r.Command...)...), " ")
			say("    ", fmt.Sprintf("%s, %d of %d checks passed (%s UTC); grade it again with:", strings.ToUpper(r.Verdict), r.Passed, r.Checks, r.At.UTC().Format("2006-01-02 15:04")))
			say("      ", again)
			if r.Verdict != "pass" && next == nil {
				next = []string{again}
			}
		}
	}
	fmt.Fprintln(w)
	if next == nil {
		fmt.Fprintln(w, "Every hop the lab grades passes.")
		return
	}
	fmt.Fprintln(w, "Next:")
	for _, c := range next {
		say("  ", c)
	}
}

// tool is the command that grades hop of.
func tool(of string) []string {
	if of == "server" {
		return []string{"bank", "grade"}
	}
	return []string{"bank", "grade", of}
}

// Keep records rep, a whole grade of hop of (no --only) of command, in
// the learner's state folder; a grade that cannot be kept is said on
// errw, and is no failure of the grade's.
func Keep(getenv func(string) string, errw io.Writer, of string, command []string, rep grade.Report) {
	path := Path(getenv)
	if path == "" || len(rep.Results) == 0 || len(rep.NotRun) > 0 {
		return
	}
	r := Record{Of: of, Command: command, Verdict: rep.Verdict, Checks: len(rep.Results), At: time.Now().UTC()}
	for _, res := range rep.Results {
		if res.Verdict == grade.Pass {
			r.Passed++
		}
	}
	if err := Save(path, r); err != nil {
		fmt.Fprintf(errw, "bank: this grade is not kept for bank grade hops: %v\n", err)
	}
}

// Command is bank grade hops.
func Command(out io.Writer, getenv func(string) string) *cobra.Command {
	return &cobra.Command{
		Use:   "hops",
		Short: "Say which hops of the outline your own code passes, and what to grade next",
		Long: `The outline's hops are the places where one key keeps money moving once: the
public API (your server), the app (your client), inbound webhooks (your
consumer), outbound calls to the rails (your payout worker). Every whole
grade (bank grade, bank grade client, bank grade webhook, bank grade payout,
without
--only) is kept, the latest of each hop, in $XDG_STATE_HOME/bank/grades.json
(else ~/.local/state/bank/grades.json); bank grade hops says how each went,
the command that grades it again, and what to do next.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path := Path(getenv)
			if path == "" {
				return exitcode.Usagef("no HOME (nor XDG_STATE_HOME) to keep the grades in: set HOME")
			}
			recs, err := Load(path)
			if err != nil {
				return exitcode.Envf("%v", err)
			}
			Print(out, recs)
			return nil
		},
	}
}
