package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/jsonshape"
	"github.com/zudojs/bank/cmd/bank/internal/outfile"
	"github.com/zudojs/bank/cmd/bank/internal/term"
	"github.com/zudojs/bank/cmd/bank/internal/torture"
)

type tortureFlags struct {
	seed                       uint64
	intents, clients, replicas int
	accounts                   int
	lockTTL                    time.Duration
	loseRate                   float64
	mistake, history           string
	json                       bool
	duration                   time.Duration
}

func (a *app) tortureCommand() *cobra.Command {
	var f tortureFlags
	cmd := &cobra.Command{
		Use:   "torture",
		Short: "Throw every fault at real servers at once and check that no intent moved money twice",
		Long: `Start PostgreSQL and several bank serve replicas sharing it, send many transfer
intents through them, and inject: duplicate deliveries (in sequence, at once,
to the other replica), the same key with a changed body, lost responses,
client crashes that resume from the journal, kill -9 of a replica holding a
key and its restart, a replica paused past the lock TTL, a replica's
database session ended mid-transfer, and an immediate PostgreSQL stop and
restart (private server only).

The faults follow the seed: each intent's (lost answers, a client crash,
the copies that follow) from the seed and its number alone, and the
server faults at points of the load the seed chose, so the same --seed
throws the same faults, the same number of times, to the same verdict: a
failing seed is a bug report anyone can replay. What the machine's timing
decides is reported apart, as "timed": which requests are in flight when a
replica or PostgreSQL dies and the retries that takes, the takeovers and
fencing rejections the servers see, latency, and, with --duration, how many
intents are sent.

Then every intent is settled through GET /transfers?key=, and a checker reads
the database and the journal: money conserved; per key at most one transfer
(each intent has an amount of its own, so a second transfer cannot hide);
identical definitive replies; every 2xx-acknowledged transfer present and
matching its reply; a changed body refused; no key left in progress.

Verdict: valid (exit 0), invalid (exit 1, with the offending keys and the
lesson's mistake the history fits), or unknown (exit 4) when a fault kind
never happened, so a quiet run cannot pass as proof. --mistake runs the
replicas with a mistake; the checker must then say invalid, and name it.
--history FILE writes every attempt and fault as JSON lines, to a new or
regular file only, put in place once whole (a write that fails: exit 3).
How to read the report, and a measured run: bank help torture.`,
		Example: `  bank torture --seed 1
  bank torture --seed 1 --mistake no-fencing`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case f.intents < 1 || f.clients < 1 || f.replicas < 1 || f.accounts < 2:
				return exitcode.Usagef("--intents, --clients and --replicas must be at least 1, --accounts at least 2")
			case f.intents > maxIntents || f.clients > maxClients || f.replicas > maxReplicas || f.accounts > maxAccounts:
				return exitcode.Usagef("--intents may be at most %d, --clients %d, --replicas %d, --accounts %d (the history of every intent is kept to judge the run; a longer test is several seeds)", maxIntents, maxClients, maxReplicas, maxAccounts)
			case f.lockTTL <= 0:
				return exitcode.Usagef("--lock-ttl must be positive, such as 2s")
			case f.duration < 0:
				return exitcode.Usagef("--duration must be 0 (no bound) or positive")
			case f.loseRate < 0 || f.loseRate > 1:
				return exitcode.Usagef("--lose-rate must be between 0 and 1, such as 0.1")
			case f.history == "-":
				return exitcode.Usagef("--history - would mix the history into the report on standard output: name a file, such as history.jsonl")
			}
			if err := checkMistakeFlag(f.mistake); err != nil {
				return err
			}
			return a.torture(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.Uint64Var(&f.seed, "seed", 1, "seed for every fault: the same seed throws the same faults")
	fl.IntVar(&f.intents, "intents", 2000, "transfer intents to send")
	fl.IntVar(&f.clients, "clients", 8, "concurrent clients")
	fl.IntVar(&f.replicas, "replicas", 2, "bank serve processes sharing the database")
	fl.IntVar(&f.accounts, "accounts", 1000, "accounts to send between")
	fl.DurationVar(&f.lockTTL, "lock-ttl", 2*time.Second, "the replicas' lock TTL (short, so takeovers happen)")
	fl.Float64Var(&f.loseRate, "lose-rate", 0.1, "the share of answers the clients lose after the replica committed (0 to 1)")
	mistakeFlag(fl, &f.mistake, "run the replicas with a mistake on purpose")
	fl.StringVar(&f.history, "history", "", "write every attempt and fault as JSON lines to this file (a new or regular one)")
	fl.DurationVar(&f.duration, "duration", 0, "stop handing out new intents after this long (0: send them all; timed, so not replayable)")
	fl.BoolVar(&f.json, "json", false, "print the report as one JSON object instead of the table")
	return cmd
}

// torture is bank torture: the history file made first, the bank and its
// replicas started, the run, then the report and its exit status. It is
// long because it sets up and takes down every process of the run in one
// place, where each defer undoes what the lines above it started.
func (a *app) torture(ctx context.Context, f tortureFlags) error {
	// The history file is made now, before anything starts, so that a
	// path it cannot be written to is said at once (package outfile: a
	// new or regular file only, never through a link, never a FIFO or a
	// device), and put in place only once the run is whole.
	var history *outfile.File
	var buffered *bufio.Writer
	if f.history != "" {
		var err error
		if history, err = outfile.Create(f.history, ".bank-history-*.jsonl"); err != nil {
			return historyPathError(f.history, err)
		}
		defer history.Discard()
		buffered = bufio.NewWriterSize(history, 64<<10)
	}
	// Two accounts beyond the intents' for the choreographed kill and
	// session kill (torture.Config.Accounts).
	l, err := a.openLoadBank(ctx, "torture", f.accounts+2)
	if err != nil {
		return err
	}
	defer l.close(ctx)
	binary, tdb, pool, db := l.binary, l.bank, l.pool, l.db
	// The replicas lose no answers of their own: the clients drop them,
	// as the seed says for each intent (torture.Config.LoseRate).
	args := []string{"--lock-ttl", f.lockTTL.String()}
	if f.mistake != "" {
		args = append(args, "--mistake", f.mistake)
	}
	var replicas []torture.Replica
	for i := 0; i < f.replicas; i++ {
		r, err := torture.StartServe(binary, tdb.URL, i, f.seed, args)
		if err != nil {
			return err
		}
		defer r.Stop()
		replicas = append(replicas, r)
	}
	cfg := torture.Config{
		Seed: f.seed, Intents: f.intents, Clients: f.clients, Accounts: f.accounts, LockTTL: f.lockTTL, LoseRate: f.loseRate,
		Replicas: replicas, DB: pool, Progress: a.io.Err, Mistake: f.mistake, Duration: f.duration,
	}
	for _, fault := range torture.AllFaults {
		if fault == "database-crash" && db.server == nil {
			continue // not our server to crash
		}
		if fault == "lost-response" && f.loseRate == 0 {
			continue
		}
		cfg.Faults = append(cfg.Faults, fault)
	}
	if term.IsTerminal(a.io.Err) {
		cfg.Live = a.io.Err
	}
	if db.server != nil {
		cfg.CrashDB = func() error {
			if err := db.server.Crash(); err != nil {
				return err
			}
			return db.server.Restart(ctx)
		}
	}
	if buffered != nil {
		cfg.History = buffered
	}
	fmt.Fprintf(a.io.Err, "torture: seed %d, %d intents, %d clients, %d replicas, lock TTL %s\n", f.seed, f.intents, f.clients, f.replicas, f.lockTTL)
	rep, err := torture.Run(ctx, cfg)
	var herr *torture.HistoryError
	if errors.As(err, &herr) {
		return historyError(f.history, herr.Err)
	}
	if err != nil {
		return err
	}
	if history != nil {
		if err := buffered.Flush(); err != nil {
			return historyError(f.history, err)
		}
		if err := history.Commit(); err != nil {
			var bad *outfile.NotAFile
			if errors.As(err, &bad) {
				return historyPathError(f.history, err)
			}
			return historyError(f.history, err)
		}
	}
	if f.json {
		rep.Schema = "bank.torture/v1"
		jsonshape.Encode(a.io.Out, &rep, false)
	} else {
		rep.Print(a.io.Out)
	}
	switch rep.Verdict {
	case "pass":
		return nil
	case "fail":
		return exitcode.Silent{Code: exitcode.No}
	case "unknown":
		return exitcode.Silent{Code: exitcode.Unknown}
	}
	return fmt.Errorf("torture gave the verdict %q, which is none of pass, fail and unknown", rep.Verdict)
}

// historyPathError says what is wrong with the path --history names
// (package outfile), as a usage error: unlike --html's, the history has
// no "-" (standard output has the report).
func historyPathError(path string, err error) error {
	var bad *outfile.NotAFile
	var room *outfile.NoRoom
	switch {
	case errors.As(err, &bad):
		return exitcode.Usagef("--history %s is %s: name a new file or a regular one, such as history.jsonl", bad.Path, bad.What)
	case errors.As(err, &room):
		return exitcode.Usagef("--history: %v", room)
	}
	return historyError(path, err)
}

// historyError is a failed write of --history: the machine's (exit 3), in
// one line, naming the file and the system's reason, and saying that
// nothing was left behind.
func historyError(path string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the temporary file's name says nothing to the learner
	}
	return exitcode.Envf("--history %s: %v; the run stopped, and no history file was left", path, err)
}

// The bounds of a torture run: its whole history is kept in memory to be
// judged, and each replica is a bank serve process and its pool.
const (
	maxIntents  = 100_000
	maxClients  = 256
	maxReplicas = 8
	maxAccounts = 100_000
)
