package practice

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// judgeShip reads each line for its meaning, then makes sure it agrees
// with the orders the database shows.
func judgeShip(ctx context.Context, ev evidence, _ Mode, printed []string) ([]Finding, error) {
	status := map[int]string{} // "" when there is no such order
	var id int
	var st string
	rows, err := ev.tables.Query(ctx, "SELECT id, status FROM orders WHERE id IN (1, 2, 3)")
	if err == nil {
		_, err = pgx.ForEachRow(rows, []any{&id, &st}, func() error {
			status[id] = st
			return nil
		})
	}
	if err != nil {
		return cannotRead(ctx, "the orders table", err)
	}
	return shipFindings(status, printed), nil
}

// cannotRead is the finding for tables the judge could not read: the
// learner's code may have changed them in any way (a column's type, a
// view in a table's place, a function that fails), and that is theirs to
// fix, not a failure of the lab's; only a run that was stopped (ctx) is
// an error.
func cannotRead(ctx context.Context, what string, err error) ([]Finding, error) {
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return []Finding{{What: what + " can be read", Detail: err.Error()}}, nil
}

// shipFindings judges the printed lines and the orders' statuses (by id;
// absent when there is no such order).
//
// It is long because it is the exercise's rules one after the other, each
// with the words that tell the learner what it saw.
func shipFindings(status map[int]string, printed []string) []Finding {
	shows := func(id int) string {
		if s, ok := status[id]; ok {
			return fmt.Sprintf("the database shows order %d %s", id, quote(s))
		}
		return fmt.Sprintf("the database has no order %d", id)
	}
	// What a line claims must be what the database shows.
	agrees := func(id int, want string) string {
		if status[id] == want {
			return ""
		}
		return "but " + shows(id)
	}
	var out []Finding
	out = append(out, lineFinding(printed, 0, "(order 1) says it shipped", func(l string) string {
		ws := words(l)
		switch {
		case hasErrorWord(ws):
			return "that reads as an error, but order 1 was paid: this call ships it and says so"
		case hasWord(ws, "already"):
			return `the first call is the one that ships order 1; "already" is for the second`
		case !hasWord(ws, "shipped"):
			return `say that it shipped (the word "shipped")`
		}
		return agrees(1, "shipped")
	}))
	out = append(out, lineFinding(printed, 1, "(order 1 again) succeeds and says it was already shipped", func(l string) string {
		ws := words(l)
		switch {
		case hasErrorWord(ws):
			return "the second call must still succeed: the order is shipped, as asked, so there is nothing wrong"
		case !hasWord(ws, "already") && hasWord(ws, "shipped"):
			return `that reads as if this call shipped it again: say it was already shipped (the word "already")`
		case !hasWord(ws, "already"):
			return `say it was already shipped (the word "already"), as a success`
		}
		return agrees(1, "shipped")
	}))
	out = append(out, lineFinding(printed, 2, "(order 2) is an error saying it is cancelled", func(l string) string {
		ws := words(l)
		switch {
		case !hasErrorWord(ws) && hasWord(ws, "shipped", "ok"):
			return "a cancelled order must give an error, not be shipped"
		case !hasErrorWord(ws):
			return "give an error: a line with an error word (error, cannot, not, failed, refused, …)"
		case !hasWord(ws, "cancel"):
			return `say why: the order is cancelled (the word "cancelled")`
		}
		return agrees(2, "cancelled")
	}))
	out = append(out, lineFinding(printed, 3, "(order 3) says there is no such order", func(l string) string {
		ws := words(l)
		switch {
		case !saysMissing(l) && hasWord(ws, "shipped", "ok") && !hasErrorWord(ws):
			return "there is no order 3, so there is nothing to ship"
		case !saysMissing(l):
			return `say that order 3 is missing ("missing", "not found", "no such order" or "does not exist")`
		}
		if _, ok := status[3]; ok {
			return "but " + shows(3)
		}
		return ""
	}))
	out = append(out, noMoreLines(printed, 4, "four lines and no more")...)

	row := func(what string, ok bool, why string) Finding {
		f := Finding{What: what, Passed: ok}
		if !ok {
			f.Detail = why
		}
		return f
	}
	out = append(out,
		row("order 1 is 'shipped'", status[1] == "shipped", shows(1)),
		row("order 2 is still 'cancelled'", status[2] == "cancelled", shows(2)+": only a paid order may be shipped"),
	)
	_, three := status[3]
	out = append(out, row("no order 3 was made up", !three, shows(3)+": markShipped must not make one"))
	return out
}
