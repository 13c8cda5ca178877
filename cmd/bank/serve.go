package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/httpserve"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/mistakes/onpurpose"
	"github.com/zudojs/bank/scenarios/lab/procs"
)

type serveFlags struct {
	addr          string
	publicTokens  bool // --expose-with-public-tokens: listen beyond loopback anyway
	loseResponses int64
	loseRate      float64
	seed          uint64
	lockTTL       time.Duration
	keep, inPlace bool
	rateLimit     float64
	mistake       string // --mistake: the server made wrong on purpose (package onpurpose)
}

func (a *app) serveCommand() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the transfer API over HTTP on a fresh, seeded bank",
		Long: `Serve the lesson's transfer API on a fresh copy of the bank (Ada, Bola and
Chidi) until Ctrl-C. Bearer tokens token-ada, token-bola and token-chidi stand
for users 1, 2 and 3. Every endpoint, status and error code: bank help serve.

Run as an app (PORT in its environment, as bank grade and process managers
do), it listens on 127.0.0.1:$PORT, takes its lock TTL from LOCK_TTL_MS, and
serves the database DATABASE_URL names in place, adding the key table if it
is missing.

For demos, --lose-responses N loses the first N transfer responses after the
transfer has committed (the connection is closed instead of answered), and
--lose-rate P loses each later one with probability P.`,
		Example: `  bank serve
  bank serve --lose-responses 2          # then: bank send --from 1 --to 2 --amount-kobo 1000000
  bank serve --addr 127.0.0.1:9000 --lock-ttl 5s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.serveEnv(cmd, &f); err != nil {
				return err
			}
			return a.serve(cmd.Context(), f)
		},
	}
	cmd.Flags().StringVar(&f.addr, "addr", "127.0.0.1:8080", "address to listen on (loopback only, unless --expose-with-public-tokens)")
	cmd.Flags().BoolVar(&f.publicTokens, "expose-with-public-tokens", false, "listen on a non-loopback --addr, though anyone who can reach it may move money with the demo tokens everyone knows")
	cmd.Flags().Int64Var(&f.loseResponses, "lose-responses", 0, "lose the first N transfer responses, after the transfer committed")
	cmd.Flags().Float64Var(&f.loseRate, "lose-rate", 0, "then lose each transfer response with this probability (0 to 1)")
	cmd.Flags().Uint64Var(&f.seed, "seed", 1, "seed for --lose-rate")
	cmd.Flags().DurationVar(&f.lockTTL, "lock-ttl", idem.DefaultLockTTL, "how long a request holds its key before a retry may take it over")
	cmd.Flags().BoolVar(&f.keep, "keep", false, "keep the bank's database after the server stops (with --database-url)")
	cmd.Flags().Float64Var(&f.rateLimit, "rate-limit", 0, "transfer requests per second per user (0: no limit); over it, 429 with Retry-After")
	cmd.Flags().BoolVar(&f.inPlace, "in-place", false, "serve the database --database-url names, as it is, instead of a fresh copy (for several servers sharing one bank); implied when PORT is set")
	mistakeFlag(cmd.Flags(), &f.mistake, "serve with a mistake on purpose")
	return cmd
}

// serve is bank serve: the flags checked, the port taken first, the bank's
// database made or served in place, then the API until told to stop. It is
// long because it is those steps in order, each a few lines.
func (a *app) serve(ctx context.Context, f serveFlags) error {
	switch {
	case f.loseResponses < 0:
		return exitcode.Usagef("--lose-responses must be 0 or more")
	case f.loseRate < 0 || f.loseRate > 1:
		return exitcode.Usagef("--lose-rate must be between 0 and 1")
	case f.lockTTL <= 0:
		return exitcode.Usagef("--lock-ttl must be positive, such as 30s")
	case f.rateLimit < 0:
		return exitcode.Usagef("--rate-limit must be 0 (no limit) or more")
	}
	if err := checkMistakeFlag(f.mistake); err != nil {
		return err
	}
	if !loopback(f.addr) {
		if !f.publicTokens {
			return exitcode.Usagef("--addr %s is not a loopback address: the demo tokens (token-ada, …) are public, so anyone who reaches it may move money; use 127.0.0.1, or say --expose-with-public-tokens", f.addr)
		}
		fmt.Fprintf(a.io.Err, "bank: warning: listening on %s with the public demo tokens: anyone who can reach it may move money\n", f.addr)
	}
	// Listen first: a taken port is reported before PostgreSQL starts.
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return exitcode.Envf("cannot listen on %s: %s; choose another with --addr", f.addr, reason(err))
	}
	defer ln.Close()

	url := a.databaseURL
	if url == "" {
		url = a.getenv("DATABASE_URL")
	}
	if f.inPlace && url == "" {
		return exitcode.Usagef("--in-place needs --database-url: the database to serve")
	}
	if a.getenv("PORT") != "" && url != "" {
		// Run as an app (by a process manager, or bank grade): the
		// database it is given is the one to serve.
		f.inPlace = true
	}
	if !f.inPlace {
		db, err := a.openDatabase(ctx)
		if err != nil {
			return err
		}
		defer db.close()
		bankDB, err := db.clones.NewDatabase(ctx, "serve")
		if err != nil {
			return err
		}
		defer func() {
			if f.keep {
				fmt.Fprintf(a.io.Err, "bank: kept database %s\n", bankDB.Name)
				return
			}
			bankDB.Drop(context.WithoutCancel(ctx))
		}()
		url = bankDB.URL
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return err
	}
	// Twice the cores: PostgreSQL does no better with more backends than
	// it can run at once, and on a small machine the extra ones only add
	// to the queue for the CPU. With 16 on the 2-core machine, bank bench
	// measured p99 18-22 ms for fresh transfers; with 4, 14-16 ms and a
	// little more throughput. Requests beyond it wait in the pool.
	cfg.MaxConns = int32(max(4, 2*runtime.NumCPU()))
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = "10s"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if f.inPlace {
		if err := prepareInPlace(ctx, pool); err != nil {
			return err
		}
	}

	var handler api.Handler = &api.Transfers{DB: pool, Keys: &idem.Store{LockTTL: f.lockTTL}}
	if b, ok := onpurpose.Lookup(f.mistake); ok {
		handler = b.New(pool, f.lockTTL)
		fmt.Fprintf(a.io.Err, "bank: BROKEN ON PURPOSE: serving with the mistake %q (%s)\n", b.Name, b.Summary)
	}
	server := &api.Server{
		Transfers: handler,
		DB:        pool,
		Keys:      pool,
		Tokens:    api.Tokens,
		Now:       time.Now, // the real clock: this is a real server
		Log:       a.io.Err,
		RateLimit: f.rateLimit,
		LoseAnswer: (&lab.LostAnswers{First: f.loseResponses, Rate: f.loseRate,
			Rand: rand.New(rand.NewPCG(f.seed, f.seed))}).Lose,
	}
	hs := httpserve.New(server)
	hs.ReadTimeout = 15 * time.Second // the head and a body of 16 KiB at most
	return a.serveUntilDone(ctx, hs, ln, a.banner)
}

// prepareInPlace checks that the database to serve is a bank and gives
// it the key store if it has none (a database made by bank grade has only
// the lesson's accounts and transfers).
func prepareInPlace(ctx context.Context, pool *pgxpool.Pool) error {
	var bank bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass('accounts') IS NOT NULL AND to_regclass('transfers') IS NOT NULL").Scan(&bank); err != nil {
		return exitcode.Envf("cannot reach the database to serve: %s", reason(err))
	}
	if !bank {
		return exitcode.Envf("the database to serve has no accounts and transfers tables: serve a bank the lab made, or leave out --in-place (and PORT) for a fresh one")
	}
	if err := idem.EnsureSchema(ctx, pool); err != nil {
		return exitcode.Envf("creating the key store: %s", reason(err))
	}
	return nil
}

// reason is the last part of a network error, without addresses.
func reason(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err.Error()
	}
	return err.Error()
}

// banner tells a person where the server is and how to try it.
func (a *app) banner(base string) {
	fmt.Fprintf(a.io.Out, `bank is serving on %s  (Ctrl-C to stop)
tokens: token-ada (user 1, account 1), token-bola (user 2, account 2), token-chidi (user 3, account 3)
try it, twice, to see the second answer replayed:
  curl -i -X POST %s/transfers -H 'Authorization: Bearer token-ada' -H 'Idempotency-Key: demo-key-0000000001' -H 'Content-Type: application/json' -d '{"from":1,"to":2,"amountKobo":1000000}'
`, base, base)
}

// serveEnv takes the twelve-factor settings a process manager (or bank
// grade) gives: PORT for --addr 127.0.0.1:PORT and LOCK_TTL_MS for
// --lock-ttl, unless the flags were given. (DATABASE_URL is read where
// every command reads it.)
func (a *app) serveEnv(cmd *cobra.Command, f *serveFlags) error {
	if p := a.getenv("PORT"); p != "" && !cmd.Flags().Changed("addr") {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 65535 {
			return exitcode.Usagef("PORT=%q is not a port number: set it to one, such as 8080, or use --addr", p)
		}
		f.addr = "127.0.0.1:" + p
	}
	if ms := a.getenv("LOCK_TTL_MS"); ms != "" && !cmd.Flags().Changed("lock-ttl") {
		n, err := strconv.Atoi(ms)
		if err != nil || n <= 0 {
			return exitcode.Usagef("LOCK_TTL_MS=%q is not a positive number of milliseconds: set it to one, such as 30000, or use --lock-ttl", ms)
		}
		f.lockTTL = time.Duration(n) * time.Millisecond
	}
	return nil
}

// loopback reports whether addr (host:port) listens on this machine only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return true // not an address at all: net.Listen says why
	}
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// serveUntilDone serves until ctx is done, then stops as serve and lab do
// (see httpserve.Run); under a test harness it says "ready ADDRESS".
func (a *app) serveUntilDone(ctx context.Context, hs *http.Server, ln net.Listener, banner func(base string)) error {
	return httpserve.Run(ctx, hs, ln, a.getenv(procs.ReadyEnv) != "", banner, a.io.Out, a.io.Err)
}
