package api

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/idem"
)

// The API's database is the bank's and the key store's, composed here,
// where the two meet (neither knows the other's tables).

// Version identifies the API's schema and seed: a template database built
// from an older one is never reused.
func Version() string { return bank.Version() + idem.Schema }

// Setup creates the bank (tables and seed) and the idempotency keys.
func Setup(ctx context.Context, db *pgx.Conn) error {
	if err := bank.Setup(ctx, db); err != nil {
		return err
	}
	if _, err := db.Exec(ctx, idem.Schema); err != nil {
		return fmt.Errorf("creating the key store: %w", err)
	}
	return nil
}
