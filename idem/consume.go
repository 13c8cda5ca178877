package idem

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
)

// Delivery is one arrival of an event at a consumer: a webhook from a
// provider, or a message from a queue. Both arrive at least once.
type Delivery struct {
	Consumer string // who processes it, e.g. "paystack-webhook" or "rewards"
	EventID  string // the sender's id for the event
	// ObjectID and Type, when set, also identify the effect: providers can
	// send two events (two ids) for one change of one object.
	ObjectID, Type string
	Now            time.Time
}

// FirstDelivery records the delivery inside the caller's transaction and
// reports whether it is the first. The caller applies the event's effect
// only when it is, in the same transaction: the record and the effect
// commit together, so a crash between them is impossible, and a
// redelivery (or a concurrent copy, which waits for the first to commit)
// finds the record and does nothing.
func FirstDelivery(ctx context.Context, tx pgx.Tx, d Delivery) (bool, error) {
	var object, typ *string
	if d.ObjectID != "" {
		object, typ = &d.ObjectID, &d.Type
	}
	var first bool
	err := tx.QueryRow(ctx, `INSERT INTO processed_events (consumer, event_id, object_id, event_type, processed_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING true`,
		d.Consumer, d.EventID, object, typ, d.Now).Scan(&first)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("recording event %s: %w", d.EventID, err)
	}
	return true, nil
}

// Prune deletes the keys older than cutoff that are safe to delete:
// completed ones, and in-progress ones whose lock expired (whoever held
// it can no longer complete it: the fencing token would refuse). A key in
// progress with a valid lock is never touched. It returns the deleted
// keys, sorted. A retry that arrives after its key was pruned is a new
// request, so the window must outlast every realistic retry.
func Prune(ctx context.Context, db DB, cutoff, now time.Time) ([]string, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	rows, err := tx.Query(ctx, `DELETE FROM idempotency_keys
		WHERE created_at < $1 AND (status = 'completed' OR locked_until < $2)
		RETURNING key`, cutoff, now)
	if err != nil {
		return nil, fmt.Errorf("pruning keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("pruning keys: %w", err)
	}
	sort.Strings(keys)
	return keys, tx.Commit(ctx)
}
