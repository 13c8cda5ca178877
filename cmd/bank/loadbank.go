package main

import (
	"context"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/scenarios/lab/pgserver"
)

// loadBank is the set-up shared by bench and torture: the server, a fresh
// bank cloned for this run with extra accounts, and a pool on it. close
// undoes all of it.
type loadBank struct {
	db     *database
	bank   *pgserver.Database
	pool   *pgxpool.Pool
	binary string // this bank binary, to start bank serve processes
}

func (a *app) openLoadBank(ctx context.Context, label string, accounts int) (*loadBank, error) {
	binary, err := os.Executable()
	if err != nil {
		return nil, err
	}
	db, err := a.openDatabase(ctx)
	if err != nil {
		return nil, err
	}
	l := &loadBank{db: db, binary: binary}
	if l.bank, err = db.clones.NewDatabase(ctx, label); err == nil {
		if l.pool, err = pgxpool.New(ctx, l.bank.URL); err == nil {
			err = bank.AddAccounts(ctx, l.pool, accounts)
		}
	}
	if err != nil {
		l.close(ctx)
		return nil, err
	}
	return l, nil
}

func (l *loadBank) close(ctx context.Context) {
	if l.pool != nil {
		l.pool.Close()
	}
	if l.bank != nil {
		l.bank.Drop(context.WithoutCancel(ctx))
	}
	l.db.close()
}
