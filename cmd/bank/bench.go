package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zudojs/bank/cmd/bank/internal/bench"
	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/jsonshape"
	"github.com/zudojs/bank/scenarios/lab"
)

// minRound is the shortest round bench accepts. A round shorter than a
// second gives noisy figures, but is enough to see every mode run (the
// tests' smoke run).
const minRound = 100 * time.Millisecond

func (a *app) benchCommand() *cobra.Command {
	var cfg bench.Config
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure safe transfers over HTTP next to pgbench running the same statements",
		Long: `Run, against one PostgreSQL and in one go: pgbench running the server's own
statements as custom scripts, with the key (claim, then the transfer and the
completion in one transaction) and without it (when pgbench is installed);
bank serve over
HTTP with fresh intents between random accounts; the same with every request
a replay; the same with every request sent twice at once; and the handler
with idempotency switched off. The modes take turns in --rounds rounds, so a
slow spell on a shared machine falls on all of them. Prints throughput, p50,
p99 and the server's peak RSS, the ratios that matter, and the invariant
checks.

Exit status: 0 when the invariants held under load, 1 when one broke (the
ratios' targets are reported, never an exit status), 2 for a bad command
line, 3 when PostgreSQL or bank serve could not be started. The figures
measured on the development machine: bank help bench.`,
		Example: `  bank bench
  bank bench --clients 8 --duration 10s --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case cfg.Clients < 1:
				return exitcode.Usagef("--clients must be at least 1")
			case cfg.Rounds < 1:
				return exitcode.Usagef("--rounds must be at least 1")
			case cfg.Duration < time.Duration(cfg.Rounds)*minRound:
				return exitcode.Usagef("--duration must give each of the %d rounds at least %s; use --duration %s or more, or fewer --rounds", cfg.Rounds, minRound, time.Duration(cfg.Rounds)*minRound)
			case cfg.Accounts < 2:
				return exitcode.Usagef("--accounts must be at least 2")
			}
			return a.bench(cmd.Context(), cfg, asJSON)
		},
	}
	cmd.Flags().IntVar(&cfg.Clients, "clients", 8, "concurrent clients")
	cmd.Flags().DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long each mode runs, over all rounds")
	cmd.Flags().IntVar(&cfg.Rounds, "rounds", 5, "rounds in which the modes take turns (steadier ratios on a busy machine)")
	cmd.Flags().IntVar(&cfg.Accounts, "accounts", 10000, "accounts to send between (many, so rows don't contend)")
	cmd.Flags().Uint64Var(&cfg.Seed, "seed", 1, "seed for the choice of accounts")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func (a *app) bench(ctx context.Context, cfg bench.Config, asJSON bool) error {
	l, err := a.openLoadBank(ctx, "bench", cfg.Accounts)
	if err != nil {
		return err
	}
	defer l.close(ctx)
	binary, bdb, pool, db := l.binary, l.bank, l.pool, l.db
	cfg.DBURL = bdb.URL
	cfg.Serve = func(ctx context.Context, args ...string) (string, int, func() error, error) {
		p, err := lab.StartServe(ctx, binary, bdb.URL, args...)
		if err != nil {
			return "", 0, nil, err
		}
		return p.Addr, p.PID(), p.Stop, nil
	}
	if db.server != nil && fileExistsAt(filepath.Join(db.server.Binaries.Dir, "bin", "pgbench")) {
		cfg.Pgbench = filepath.Join(db.server.Binaries.Dir, "bin", "pgbench")
	} else if p, err := exec.LookPath("pgbench"); err == nil {
		cfg.Pgbench = p
	}
	rep, err := bench.Run(ctx, pool, cfg, a.io.Err)
	if err != nil {
		return err
	}
	if asJSON {
		rep.Schema = "bank.bench/v1"
		jsonshape.Encode(a.io.Out, &rep, true)
	} else {
		rep.Print(a.io.Out)
	}
	if !rep.Holds {
		return exitcode.Nof("an invariant broke under load: %s", strings.Join(rep.Checks, "; "))
	}
	return nil
}

func fileExistsAt(p string) bool { _, err := os.Stat(p); return err == nil }
