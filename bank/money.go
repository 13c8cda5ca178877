package bank

import (
	"context"
	"fmt"

	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Naira formats whole kobo as naira with thousands separators, the way the
// lesson prints money: ₦50,000, ₦10.50, -₦5,000.
func Naira(kobo int64) string {
	sign := ""
	u := uint64(kobo)
	if kobo < 0 {
		sign, u = "-", uint64(-(kobo+1))+1 // no overflow for the smallest int64
	}
	whole, frac := u/100, u%100
	digits := strconv.FormatUint(whole, 10)
	var b strings.Builder
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	if frac != 0 {
		fmt.Fprintf(&b, ".%02d", frac)
	}
	return sign + "₦" + b.String()
}

// Snapshot is the state the balances line and the invariant checks read.
type Snapshot struct {
	Holders   []string // first names, by account id
	Balances  []int64  // kobo, by account id
	Total     int64
	Transfers int
	In, Out   int64 // deposits received and payouts made, kobo
}

// Line renders the lesson's balances line:
// Ada ₦50,000, Bola ₦5,000, Chidi ₦20,000 | total ₦75,000 | transfers 0
func (s Snapshot) Line() string {
	parts := make([]string, len(s.Holders))
	for i, h := range s.Holders {
		parts[i] = h + " " + Naira(s.Balances[i])
	}
	return fmt.Sprintf("%s | total %s | transfers %d", strings.Join(parts, ", "), Naira(s.Total), s.Transfers)
}

// Read takes a snapshot of the accounts and the number of transfers.
func Read(ctx context.Context, db DB) (Snapshot, error) {
	var s Snapshot
	rows, err := db.Query(ctx, "SELECT split_part(holder, ' ', 1), balance_kobo FROM accounts ORDER BY id")
	if err != nil {
		return s, fmt.Errorf("reading balances: %w", err)
	}
	var holder string
	var balance int64
	_, err = pgx.ForEachRow(rows, []any{&holder, &balance}, func() error {
		s.Holders = append(s.Holders, holder)
		s.Balances = append(s.Balances, balance)
		s.Total += balance
		return nil
	})
	if err != nil {
		return s, fmt.Errorf("reading balances: %w", err)
	}
	if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM transfers),
		(SELECT COALESCE(sum(amount_kobo), 0) FROM deposits), (SELECT COALESCE(sum(amount_kobo), 0) FROM payouts)`).
		Scan(&s.Transfers, &s.In, &s.Out); err != nil {
		return s, fmt.Errorf("counting transfers: %w", err)
	}
	return s, nil
}

// Balances is the lesson's balances line, read from db.
func Balances(ctx context.Context, db DB) (string, error) {
	s, err := Read(ctx, db)
	return s.Line(), err
}

// Times says how many times something happened, in words: never, once,
// twice, 3 times. Transcripts and report cards say it of money moving.
func Times(n int) string {
	switch n {
	case 0:
		return "never"
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return strconv.Itoa(n) + " times"
}
