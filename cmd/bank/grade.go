package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/cmd/bank/internal/htmlpage"
	"github.com/zudojs/bank/cmd/bank/internal/names"
	"github.com/zudojs/bank/cmd/bank/internal/term"
)

type gradeFlags struct {
	contract     bool
	json         bool
	lockTTL      time.Duration
	startTimeout time.Duration
	only         []string
	html         string
}

func (a *app) gradeCommand() *cobra.Command {
	var f gradeFlags
	cmd := &cobra.Command{
		Use:   "grade [flags] -- CMD [ARGS…]",
		Short: "Throw the lesson's faults at your own server, in any language, and get a report card",
		Long: `Grade a transfer server of your own against the lesson. For every check,
bank grade makes a fresh bank (the lesson's accounts and transfers, seeded),
starts CMD with DATABASE_URL, PORT and LOCK_TTL_MS in its environment, and
throws one fault at it through a proxy of its own: a lost reply, a double
tap, a storm of copies, a crash mid-transfer, a server paused past its lock.
Each check is one line on the report card, with the mistake of the lesson a
failure looks like and the command that shows it done right.

See the contract (what the server must answer) with bank grade --contract,
and what each check proves, and how, with bank help grade.

Exit status: 0 when every required check passes, 1 when one fails, 2 for a
bad command line, 3 when the server cannot be run or never listens.`,
		Example: `  bank grade --contract
  bank grade -- node server.js
  bank grade -- python3 app.py
  bank grade --only lost-response,crash -- ./myserver
  bank grade -- bank serve                  # the lab's own server: passes
  bank grade -- bank serve --break no-fencing`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.contract && len(args) > 0 {
				return exitcode.Usagef("--contract prints the contract and runs nothing; drop it to grade %q, or drop the command to read the contract", strings.Join(args, " "))
			}
			if f.contract {
				fmt.Fprint(a.io.Out, grade.Contract())
				return nil
			}
			dash := cmd.ArgsLenAtDash()
			if dash != 0 || len(args) == 0 {
				return exitcode.Usagef("name your server's command after --, such as: bank grade -- node server.js (bank grade --contract says what it must do)")
			}
			return a.grade(cmd.Context(), f, args)
		},
	}
	cmd.Flags().BoolVar(&f.contract, "contract", false, "print the API and database contract the checks hold a server to, and exit")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the report card as JSON")
	cmd.Flags().DurationVar(&f.lockTTL, "lock-ttl", 2*time.Second, "the lock TTL given to the server as LOCK_TTL_MS")
	cmd.Flags().DurationVar(&f.startTimeout, "start-timeout", 20*time.Second, "how long the server may take to listen on its PORT")
	cmd.Flags().StringSliceVar(&f.only, "only", nil, "run only these checks (comma-separated): "+strings.Join(grade.Names(), ", "))
	cmd.Flags().StringVar(&f.html, "html", "", "also write the report card, with a sequence diagram of what happened in every check, as one self-contained web page to this file (- for standard output)")
	return cmd
}

func (a *app) grade(ctx context.Context, f gradeFlags, command []string) error {
	switch {
	case f.lockTTL < 100*time.Millisecond || f.lockTTL > time.Minute:
		return exitcode.Usagef("--lock-ttl must be between 100ms and 1m, such as 2s")
	case f.startTimeout <= 0:
		return exitcode.Usagef("--start-timeout must be positive, such as 20s")
	case f.html == "-" && f.json:
		return exitcode.Usagef("--html - and --json both write to standard output: give --html a file, such as grade.html")
	}
	for _, name := range f.only {
		if !slices.Contains(grade.Names(), name) {
			return exitcode.Usagef("unknown check %q%s in --only; checks: %s", name, names.DidYouMean(name, grade.Names()), strings.Join(grade.Names(), ", "))
		}
	}
	if _, err := exec.LookPath(command[0]); err != nil {
		// As for bank exercise: a server that cannot be started is the
		// environment's failure (exit 3), whatever the reason.
		return exitcode.Envf("cannot run %q: %s; check the command after --", command[0], lookPathReason(err))
	}
	colour, err := a.colorOn()
	if err != nil {
		return err
	}
	page, err := htmlpage.Start(f.html, &a.io.Out)
	if err != nil {
		return err
	}
	defer page.Discard()
	db, err := a.openDatabaseFor(ctx, grade.Template(), true)
	if err != nil {
		return err
	}
	defer db.close()
	cfg := grade.Config{
		Command: command, LockTTL: f.lockTTL, StartTimeout: f.startTimeout, Only: f.only,
		NewDatabase: func(ctx context.Context, label string) (string, string, func(), error) {
			d, err := db.clones.NewDatabase(ctx, label)
			if err != nil {
				return "", "", nil, err
			}
			drop := func() { d.Drop(context.WithoutCancel(ctx)) }
			// The learner's server gets a role that owns its database and
			// nothing else; a --database-url is used as given.
			url := d.URL
			if db.clones.IsThrowaway() {
				if url, err = d.Confine(ctx); err != nil {
					drop()
					return "", "", nil, err
				}
			}
			return d.URL, url, drop, nil
		},
	}
	if !f.json {
		cfg.Progress = a.io.Err
	}
	rep, err := grade.Run(ctx, cfg)
	se, startFailed := grade.IsStartError(err)
	if err == nil || startFailed {
		if err := page.WriteWith(func(w io.Writer) error { return rep.WritePage(w, command, f.lockTTL) }); err != nil {
			return err
		}
	}
	width := 0 // the diagrams of -v: the terminal's width, else 80
	if n := term.Width(a.io.Out); n >= 60 && term.IsTerminal(a.io.Out) {
		width = n
	}
	if startFailed {
		if !f.json {
			rep.Print(a.io.Out, command, f.lockTTL, colour, a.verbose, width)
		}
		msg := "bank: " + se.Why
		if se.Stderr != "" {
			msg += "\nits last output:\n" + indent(se.Stderr)
		}
		fmt.Fprintln(a.io.Err, msg)
		return exitcode.Silent{Code: exitcode.Env}
	}
	if err != nil {
		return err
	}
	if f.json {
		enc := json.NewEncoder(a.io.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		rep.Print(a.io.Out, command, f.lockTTL, colour, a.verbose, width)
	}
	if !rep.Passed {
		return exitcode.Silent{Code: exitcode.No}
	}
	return nil
}

func lookPathReason(err error) string {
	var e *exec.Error
	if errors.As(err, &e) {
		return e.Err.Error()
	}
	return err.Error()
}
