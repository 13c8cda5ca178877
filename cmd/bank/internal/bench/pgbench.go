package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab/procs"
)

// The pgbench scripts are built from the statements the server itself
// runs (bank's and idem's exported SQL), with pgbench variables bound to
// their parameters, so that they cannot drift from the real thing. The
// keyed one follows the lesson's design: the claim commits on its own,
// then the transfer and the completion share one transaction. pgbench
// skips the handler's checks of owner and status (the locking statement
// still reads them) and completes with 200, so that the invariant check
// can tell its keys from the server's 201s.
var (
	keyExpr     = `'pgbench-' || :client_id || '-' || :k`
	transferSQL = []string{
		bind(bank.LockAccountsSQL, ":from", ":to"),
		bind(bank.DebitSQL, "100", ":from"),
		bind(bank.CreditSQL, "100", ":to"),
		bind(bank.RecordSQL, ":from", ":to", "100"),
	}
	scriptKeyless = pgbenchScript(nil, transferSQL, nil)
	scriptKeyed   = pgbenchScript(
		[]string{bind(idem.ClaimSQL, "1", keyExpr, "'h'", "'l'", "now() + interval '30 seconds'", "now()")},
		transferSQL,
		[]string{bind(idem.CompleteSQL, "1", keyExpr, "'l'", "200", "'{}'")},
	)
)

// bind replaces $1, $2, … with the given SQL expressions.
func bind(sql string, args ...string) string {
	for i := len(args); i >= 1; i-- { // $10 before $1
		sql = strings.ReplaceAll(sql, "$"+strconv.Itoa(i), args[i-1])
	}
	return sql
}

func pgbenchScript(before, inTx, inTxAfter []string) string {
	var b strings.Builder
	b.WriteString("\\set from random(4, :naccounts + 3)\n\\set to random(4, :naccounts + 2)\n\\if :to >= :from\n\\set to :to + 1\n\\endif\n\\set k random(1, 1000000000000)\n")
	for _, s := range before {
		b.WriteString(s + ";\n")
	}
	b.WriteString("BEGIN;\n")
	for _, s := range append(append([]string{}, inTx...), inTxAfter...) {
		b.WriteString(s + ";\n")
	}
	b.WriteString("END;\n")
	return b.String()
}

var tpsRE = regexp.MustCompile(`tps = ([\d.]+) \(without initial connection time\)`)

func runPgbench(ctx context.Context, cfg Config, script string, d time.Duration) (sample, error) {
	seconds := max(1, int(math.Round(d.Seconds()))) // pgbench counts whole seconds
	dir, err := os.MkdirTemp("", "bank-pgbench-")
	if err != nil {
		return sample{}, err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "transfer.sql")
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		return sample{}, err
	}
	env, err := libpqEnv(cfg.DBURL)
	if err != nil {
		return sample{}, err
	}
	spec := procs.Spec{Path: cfg.Pgbench, Dir: dir, Env: env, Args: []string{"-n", "-f", file, "-c", strconv.Itoa(cfg.Clients), "-j", "2",
		"-T", strconv.Itoa(seconds), "-D", "naccounts=" + strconv.Itoa(cfg.Accounts),
		"--log", "--log-prefix", filepath.Join(dir, "log")}}
	if err := spec.Run(ctx); err != nil {
		return sample{}, fmt.Errorf("pgbench: %v\n%s", err, spec.Output.String())
	}
	// Per-transaction latencies, in microseconds, are the third column of
	// pgbench's log files.
	var lat []time.Duration
	logs, _ := filepath.Glob(filepath.Join(dir, "log*"))
	for _, l := range logs {
		raw, _ := os.ReadFile(l)
		for _, line := range strings.Split(string(raw), "\n") {
			f := strings.Fields(line)
			if len(f) > 2 {
				us, _ := strconv.Atoi(f[2])
				lat = append(lat, time.Duration(us)*time.Microsecond)
			}
		}
	}
	s := sample{lat: lat, seconds: float64(seconds)}
	if m := tpsRE.FindStringSubmatch(spec.Output.String()); m != nil { // its last lines: the Tail keeps them
		s.perSec, _ = strconv.ParseFloat(m[1], 64)
	}
	return s, nil
}

// libpqEnv turns a connection URL into libpq's environment variables, so
// that pgbench gets the database (and any password) in its environment,
// never on its command line, where every local user could read it.
func libpqEnv(dbURL string) ([]string, error) {
	c, err := pgconn.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	env := []string{"PGHOST=" + c.Host, "PGPORT=" + strconv.Itoa(int(c.Port)), "PGUSER=" + c.User, "PGDATABASE=" + c.Database, "PGSSLMODE=disable"}
	if c.Password != "" {
		env = append(env, "PGPASSWORD="+c.Password)
	}
	return env, nil
}
