package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/idem"
)

func (a *app) keysCommand() *cobra.Command {
	keys := &cobra.Command{
		Use:   "keys",
		Short: "Look after the idempotency keys of a bank database",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var olderThan time.Duration
	var asJSON bool
	gc := &cobra.Command{
		Use:   "gc --older-than 24h",
		Short: "Delete keys older than the window: completed ones, and in-progress ones whose lock expired",
		Long: `Delete the idempotency keys created before now minus --older-than that are
safe to delete: completed keys, and in-progress keys whose lock has expired.
A key in progress with a valid lock is never deleted. A retry that arrives
after its key is gone is treated as a new request, so the window must outlast
every realistic retry (24 hours is common).

With --database-url, the keys of that database are cleaned (the database the
URL names, which must hold the bank's tables). With the private server, a
fresh bank is started and cleaned: it has no keys yet.`,
		Example: `  bank keys gc --older-than 24h --database-url postgres://me@localhost/bank`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if olderThan <= 0 {
				return exitcode.Usagef("--older-than must be positive, such as 24h")
			}
			return a.keysGC(cmd.Context(), olderThan, asJSON)
		},
	}
	gc.Flags().DurationVar(&olderThan, "older-than", 24*time.Hour, "keep keys younger than this")
	gc.Flags().BoolVar(&asJSON, "json", false, `print one JSON object (bank help json: bank.keys-gc/v1)`)
	keys.AddCommand(gc)
	return keys
}

func (a *app) keysGC(ctx context.Context, window time.Duration, asJSON bool) error {
	url := a.databaseURL
	if url == "" {
		url = a.getenv("DATABASE_URL")
	}
	note := ""
	if url == "" {
		db, err := a.openDatabase(ctx)
		if err != nil {
			return err
		}
		defer db.close()
		fresh, err := db.clones.NewDatabase(ctx, "keys")
		if err != nil {
			return err
		}
		defer fresh.Drop(context.WithoutCancel(ctx))
		url = fresh.URL
		note = " (the private server starts a fresh bank each run; use --database-url for one that lives on)"
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return exitcode.Envf("database URL: %v", err)
	}
	defer pool.Close()
	now := time.Now() // the real clock: this cleans a real database
	deleted, err := idem.Prune(ctx, pool, now.Add(-window), now)
	if err != nil {
		return exitcode.Envf("%v", err)
	}
	if asJSON {
		return json.NewEncoder(a.io.Out).Encode(struct {
			Schema      string   `json:"schema"`
			OlderThanMs int64    `json:"olderThanMs"`
			Deleted     []string `json:"deleted"`
		}{"bank.keys-gc/v1", window.Milliseconds(), append([]string{}, deleted...)})
	}
	fmt.Fprintf(a.io.Out, "deleted %d keys older than %s%s\n", len(deleted), window, note)
	if len(deleted) > 0 {
		fmt.Fprintln(a.io.Out, "  "+strings.Join(deleted, "\n  "))
	}
	return nil
}
