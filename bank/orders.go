package bank

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// OrdersSchema is the table of the lesson's first exercise.
const OrdersSchema = `CREATE TABLE orders (id integer PRIMARY KEY, status text NOT NULL)`

// MarkShipped is naturally idempotent: the target state says everything,
// so a second call changes nothing and still reports success. Only a paid
// order can be shipped.
func MarkShipped(ctx context.Context, db DB, orderID int64) (string, error) {
	var id int64
	err := db.QueryRow(ctx, "UPDATE orders SET status = 'shipped' WHERE id = $1 AND status = 'paid' RETURNING id", orderID).Scan(&id)
	if err == nil {
		return "shipped", nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return "", err
	}
	// Nothing changed: find out why.
	var status string
	err = db.QueryRow(ctx, "SELECT status FROM orders WHERE id = $1", orderID).Scan(&status)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "error: order is missing", nil
	case err != nil:
		return "", err
	case status == "shipped":
		return "already shipped (ok)", nil
	}
	return fmt.Sprintf("error: order is %s", status), nil
}
