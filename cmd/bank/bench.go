package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zudojs/bank/bank/procs"
	"github.com/zudojs/bank/cmd/bank/internal/bench"
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
				return usagef("--clients must be at least 1")
			case cfg.Rounds < 1:
				return usagef("--rounds must be at least 1")
			case cfg.Duration < time.Duration(cfg.Rounds)*minRound:
				return usagef("--duration must give each of the %d rounds at least %s; use --duration %s or more, or fewer --rounds", cfg.Rounds, minRound, time.Duration(cfg.Rounds)*minRound)
			case cfg.Accounts < 2:
				return usagef("--accounts must be at least 2")
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
		p, err := procs.Serve(ctx, binary, bdb.URL, args...)
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
		enc := json.NewEncoder(a.io.Out)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	} else {
		a.printBench(rep)
	}
	if !rep.Holds {
		return nof("an invariant broke under load: %s", strings.Join(rep.Checks, "; "))
	}
	return nil
}

func fileExistsAt(p string) bool { _, err := os.Stat(p); return err == nil }

func (a *app) printBench(rep bench.Report) {
	w := a.io.Out
	fmt.Fprintf(w, "%d clients, %d accounts, %.0f s per mode in %d rounds of %.1f s\n\n",
		rep.Clients, rep.Accounts, rep.Seconds, rep.Rounds, rep.Seconds/float64(rep.Rounds))
	fmt.Fprintf(w, "%-42s %10s %8s %8s %11s\n", "mode", "per second", "p50 ms", "p99 ms", "server RSS")
	top := 0.0
	for _, r := range rep.Results {
		top = max(top, r.Throughput)
	}
	for _, r := range rep.Results {
		if r.Note != "" {
			fmt.Fprintf(w, "%-42s %s\n", r.Mode, r.Note)
			continue
		}
		rss := "-"
		if r.PeakRSSMiB > 0 {
			rss = fmt.Sprintf("%.1f MiB", r.PeakRSSMiB)
		}
		errs := ""
		if r.Errors > 0 {
			var kinds []string
			for why, n := range r.Failures {
				kinds = append(kinds, fmt.Sprintf("%s ×%d", why, n))
			}
			sort.Strings(kinds)
			errs = fmt.Sprintf("  (%d errors: %s)", r.Errors, strings.Join(kinds, ", "))
		}
		fmt.Fprintf(w, "%-42s %10.0f %8.2f %8.2f %11s%s\n", r.Mode, r.Throughput, r.P50, r.P99, rss, errs)
	}
	fmt.Fprintln(w)
	for _, r := range rep.Results {
		if top > 0 && r.Note == "" {
			fmt.Fprintf(w, "%-42s %s\n", r.Mode, strings.Repeat("#", int(40*r.Throughput/top+0.5)))
		}
	}
	fmt.Fprintln(w, "\nratios:")
	for _, r := range rep.Ratios {
		fmt.Fprintf(w, "  %-38s %s\n", r.Name, ratioText(r))
	}
	fmt.Fprintln(w, "\ninvariants:")
	for _, c := range rep.Checks {
		fmt.Fprintln(w, "  "+c)
	}
}

// ratioText is a ratio's value and how it stands against its target.
func ratioText(r bench.Ratio) string {
	if !r.Available {
		return "n/a"
	}
	v := fmt.Sprintf("%.2f", r.Value)
	if r.Target == 0 {
		return v
	}
	verdict, cmp := "meets", ">="
	if r.Ceiling {
		cmp = "<="
	}
	if !r.Met {
		verdict = "misses"
	}
	return fmt.Sprintf("%s (target %s %g: %s)", v, cmp, r.Target, verdict)
}
