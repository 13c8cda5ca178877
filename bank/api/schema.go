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

// SchemaText is the text of everything Setup makes: a template database
// built from other text is never reused.
func SchemaText() string { return bank.SchemaText() + idem.Schema }

// Setup creates the bank (tables and seed) and the idempotency keys.
func Setup(ctx context.Context, db *pgx.Conn) error {
	if err := bank.SetupAll(ctx, db); err != nil {
		return err
	}
	if _, err := db.Exec(ctx, idem.Schema); err != nil {
		return fmt.Errorf("creating the key store: %w", err)
	}
	return nil
}
