package grade

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/witness"
)

// graderApp is the application_name of the grader's own sessions, which
// tells them from the server's in pg_stat_activity.
const graderApp = "bank grade"

// witnessed reports whether the check's database has the witness
// (package witness): where the lab's role is not a superuser, it cannot.
func (t *trial) witnessed() bool {
	if t.hasWitness == nil {
		ok, err := witness.Installed(t.ctx, t.db)
		t.must(err)
		t.hasWitness = &ok
	}
	return *t.hasWitness
}

// lastWrite is where the witness's record stands now.
func (t *trial) lastWrite() int64 {
	seq, err := witness.Last(t.ctx, t.db)
	t.must(err)
	return seq
}

// writesSince is what the witness recorded after seq: every row the
// server (or anyone) committed since, with its top-level transaction.
func (t *trial) writesSince(seq int64) []witness.Write {
	writes, err := witness.Since(t.ctx, t.db, seq)
	t.must(err)
	return writes
}

// serverBusy reports whether a session of the server's is doing anything
// in its database (running a statement, or inside a transaction).
func (t *trial) serverBusy() bool {
	var busy bool
	t.must(t.db.QueryRow(t.ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database()
		AND pid <> pg_backend_pid() AND application_name <> $1 AND backend_type = 'client backend' AND state <> 'idle')`, graderApp).Scan(&busy))
	return busy
}

// quiet waits, bounded, until the server's sessions have been idle for a
// while: what it writes after it has answered (a last_used_at, say) is in
// the witness's record by then.
func (t *trial) quiet(bound time.Duration) {
	idleSince := time.Now()
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if t.serverBusy() {
			idleSince = time.Now()
		} else if time.Since(idleSince) >= 200*time.Millisecond {
			return
		}
	}
}

// endServerSessions ends every session of the server's in its database
// (pg_terminate_backend), as a crash of the server does: what they had
// not committed never will be.
func (t *trial) endServerSessions() {
	_, err := t.db.Exec(t.ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database()
		AND pid <> pg_backend_pid() AND application_name <> $1 AND backend_type = 'client backend'`, graderApp)
	t.must(err)
}

// transferRow finds, among writes, the INSERT of the transfers row of an
// intent (its accounts and amount).
func transferRow(writes []witness.Write, from, to, kobo int64) (witness.Write, bool) {
	for _, w := range writes {
		if w.Op != "INSERT" || w.Table != "public.transfers" {
			continue
		}
		var row struct {
			From int64 `json:"from_account"`
			To   int64 `json:"to_account"`
			Kobo int64 `json:"amount_kobo"`
		}
		if json.Unmarshal([]byte(w.New), &row) == nil && row.From == from && row.To == to && row.Kobo == kobo {
			return w, true
		}
	}
	return witness.Write{}, false
}

// lesson's tables, which every server has: writes to them are the
// transfer's own.
func lessonTable(table string) bool {
	return table == "public.accounts" || table == "public.transfers"
}

// summary says what a transaction wrote, table by table, in the order
// it first wrote each: "public.accounts UPDATE ×2, public.transfers INSERT".
func summary(writes []witness.Write, xact uint64) string {
	var order []string
	count := map[string]int{}
	for _, w := range writes {
		if w.Xact != xact {
			continue
		}
		k := w.Table + " " + w.Op
		if count[k] == 0 {
			order = append(order, k)
		}
		count[k]++
	}
	for i, k := range order {
		if count[k] > 1 {
			order[i] = fmt.Sprintf("%s ×%d", k, count[k])
		}
	}
	return strings.Join(order, ", ")
}

// transactions lists the distinct transactions of writes, in order.
func transactions(writes []witness.Write) []uint64 {
	var out []uint64
	for _, w := range writes {
		if !slices.Contains(out, w.Xact) {
			out = append(out, w.Xact)
		}
	}
	return out
}

// shortRow is a row's JSON, cut for the evidence.
func shortRow(s string) string {
	if r := []rune(s); len(r) > 160 {
		return string(r[:160]) + "…"
	}
	return s
}
