package practice

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/zudojs/bank/bank"
)

func quote(s string) string { return "'" + s + "'" }

// The clean-up's keys.
const (
	oldCompleted = "old-completed"
	newCompleted = "new-completed"
	oldStuck     = "old-stuck"
	oldLocked    = "old-locked"
)

var lessonKeys = []string{oldCompleted, newCompleted, oldStuck}

// keyAudit records every key inserted or deleted (and every TRUNCATE) in
// a schema of the lab's own, so the checks know what a run deleted, not
// only what it left.
//
// The trigger runs as whoever changes the keys (SECURITY INVOKER, the
// default): the learner's role, which may add rows to the record and do
// nothing else with it (allowRecord). It must never run as the lab: the
// learner owns idempotency_keys, and so its columns' types, casts and
// operators, and a function that runs as another role with those in
// scope hands the learner that role (a SECURITY DEFINER trigger here ran
// an assignment cast of the learner's, and COPY … TO PROGRAM in it, as the
// postgres account). Every name is qualified, pg_catalog's too, and
// search_path is pinned, so that nothing of the learner's is picked up by
// name either. The learner can drop the triggers, or add rows of their
// own: that fools the checks about their own run, and reaches nothing
// else.
const keyAudit = `
CREATE SCHEMA bank_lab;
CREATE TABLE bank_lab.key_events (id bigserial PRIMARY KEY, op text NOT NULL, user_id bigint, key text);
CREATE FUNCTION bank_lab.record_key() RETURNS trigger LANGUAGE plpgsql
  SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF TG_OP OPERATOR(pg_catalog.=) 'TRUNCATE' THEN
    INSERT INTO bank_lab.key_events (op) VALUES ('T');
  ELSIF TG_OP OPERATOR(pg_catalog.=) 'INSERT' THEN
    INSERT INTO bank_lab.key_events (op, user_id, key) VALUES ('I', NEW.user_id, NEW.key);
  ELSE
    INSERT INTO bank_lab.key_events (op, user_id, key) VALUES ('D', OLD.user_id, OLD.key);
  END IF;
  RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION bank_lab.record_key() FROM PUBLIC;
CREATE TRIGGER bank_lab_keys AFTER INSERT OR DELETE ON public.idempotency_keys
  FOR EACH ROW EXECUTE FUNCTION bank_lab.record_key();
CREATE TRIGGER bank_lab_keys_truncate AFTER TRUNCATE ON public.idempotency_keys
  FOR EACH STATEMENT EXECUTE FUNCTION bank_lab.record_key();
`

// allowRecord lets the learner's role add rows to the lab's record of
// keys, which its statements do through keyAudit's trigger, and nothing
// more: no SELECT, UPDATE, DELETE or TRUNCATE.
func allowRecord(ctx context.Context, db *pgxpool.Pool, role string) error {
	r := pgx.Identifier{role}.Sanitize()
	_, err := db.Exec(ctx, "GRANT USAGE ON SCHEMA bank_lab TO "+r+"; GRANT INSERT ON TABLE bank_lab.key_events TO "+r+
		"; GRANT USAGE ON SEQUENCE bank_lab.key_events_id_seq TO "+r)
	return err
}

// insertLessonKeys inserts the lesson's three keys, by the lesson's clock.
func insertLessonKeys(ctx context.Context, db *pgxpool.Pool) error {
	_, err := db.Exec(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, status, lock_id, locked_until, created_at) VALUES
		(1, 'old-completed', 'h', 'completed', NULL, NULL, $1),
		(1, 'new-completed', 'h', 'completed', NULL, NULL, $2),
		(1, 'old-stuck', 'h', 'in_progress', 'lock-1', $3, $1)`,
		hoursAgo(48), hoursAgo(1), hoursAgo(47))
	return err
}

func prepareCleanup(ctx context.Context, db *pgxpool.Pool, m Mode) error {
	if m == SQLMode {
		if err := insertLessonKeys(ctx, db); err != nil {
			return err
		}
		if _, err := db.Exec(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, status, lock_id, locked_until, created_at)
			VALUES (1, 'old-locked', 'h', 'in_progress', 'lock-2', $1, $2)`, cleanupNow.Add(time.Minute), hoursAgo(48)); err != nil {
			return err
		}
	} else if _, err := db.Exec(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, status, lock_id, locked_until, created_at)
		VALUES (2, 'old-locked', 'h', 'in_progress', 'lock-2', $1, $2)`, guardLocked, guardCreated); err != nil {
		return err
	}
	_, err := db.Exec(ctx, keyAudit)
	return err
}

func keyNames(ctx context.Context, db bank.DB) ([]string, error) {
	rows, err := db.Query(ctx, "SELECT key FROM idempotency_keys ORDER BY key")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

type keyRow struct {
	status      string
	created     time.Time
	lockedUntil *time.Time
}

func (r keyRow) String() string {
	s := strings.ReplaceAll(r.status, "_", " ") + ", created " + r.created.UTC().Format("2006-01-02 15:04 UTC")
	if r.lockedUntil != nil {
		s += ", locked until " + r.lockedUntil.UTC().Format("2006-01-02 15:04 UTC")
	}
	return s
}

// judgeCleanup checks the keys the database shows deleted and kept, and
// that the two printed lines say the same.
func judgeCleanup(ctx context.Context, ev evidence, m Mode, printed []string) ([]Finding, error) {
	k := keyState{left: map[string]keyRow{}, inserted: map[string]bool{}, deleted: map[string]bool{}}
	left := k.left
	var keptNames []string
	var key string
	var r keyRow
	rows, err := ev.tables.Query(ctx, "SELECT key, status, created_at, locked_until FROM idempotency_keys ORDER BY key")
	if err == nil {
		_, err = pgx.ForEachRow(rows, []any{&key, &r.status, &r.created, &r.lockedUntil}, func() error {
			if _, dup := left[key]; !dup {
				keptNames = append(keptNames, key)
			}
			left[key] = r
			return nil
		})
	}
	if err != nil {
		return cannotRead(ctx, "the idempotency_keys table", err)
	}
	var op string
	rows, err = ev.record.Query(ctx, "SELECT op, coalesce(key, '') FROM bank_lab.key_events ORDER BY id")
	if err == nil {
		_, err = pgx.ForEachRow(rows, []any{&op, &key}, func() error {
			switch op {
			case "I":
				k.inserted[key] = true
			case "D":
				k.deleted[key] = true
			case "T":
				k.truncated = true
			}
			return nil
		})
	}
	if err != nil {
		return cannotRead(ctx, "the lab's record of deleted keys", err)
	}
	k.keptNames = keptNames
	return cleanupFindings(k, m, printed), nil
}

// keyState is what the clean-up's run did to the keys: the rows left, the
// names of those (in order), and what the lab's record shows inserted,
// deleted or truncated.
type keyState struct {
	left              map[string]keyRow
	keptNames         []string
	inserted, deleted map[string]bool
	truncated         bool
}

// It is long because it is the exercise's rules one after the other, each
// with the words that tell the learner what it saw.
func cleanupFindings(k keyState, m Mode, printed []string) []Finding {
	left, keptNames, inserted, deletedEv, truncated := k.left, k.keptNames, k.inserted, k.deleted, k.truncated
	prepared := map[string]bool{oldLocked: true}
	if m == SQLMode {
		for _, k := range lessonKeys {
			prepared[k] = true
		}
	}
	existed := func(k string) bool { return prepared[k] || inserted[k] }
	var gone []string // what the run deleted, by the database
	for k := range deletedEv {
		if _, still := left[k]; !still {
			gone = append(gone, k)
		}
	}
	slices.Sort(gone)
	known := map[string]bool{}
	for k := range prepared {
		known[k] = true
	}
	for _, k := range slices.Concat(lessonKeys, keptNames, gone) {
		known[k] = true
	}
	for k := range inserted {
		known[k] = true
	}

	var out []Finding
	// The two lines.
	find := func(word string) (int, []string) {
		for i, l := range printed {
			if ws := words(l); len(ws) > 0 && ws[0] == word {
				var names []string
				seen := map[string]bool{} // a set: a statement may leave 100,000 keys
				for _, t := range keyTokenRE.FindAllString(l, -1) {
					if known[t] && !seen[t] {
						seen[t] = true
						names = append(names, t)
					}
				}
				slices.Sort(names)
				return i, names
			}
		}
		return -1, nil
	}
	di, dNames := find("deleted")
	f := Finding{What: "the deleted: line names the keys the database shows deleted", line: true}
	switch {
	case di < 0:
		f.Detail = fmt.Sprintf("no line starts with deleted: the database shows %s deleted; print the keys your DELETE returned (RETURNING key) as deleted: [...]", listOrNone(gone))
	case !slices.Equal(dNames, gone) && m == SQLMode:
		f.Detail = fmt.Sprintf("the database shows %s deleted, but your statement returned %s", listOrNone(gone), listOrNone(dNames))
		if len(dNames) == 0 {
			f.Detail += ": end it with RETURNING key"
		}
	case !slices.Equal(dNames, gone):
		f.Detail = fmt.Sprintf("the database shows %s deleted, but your program printed %q", listOrNone(gone), clip(printed[di]))
		if len(dNames) == 0 && len(gone) > 0 {
			f.Detail += ": print the keys your DELETE returned (RETURNING key)"
		} else {
			f.Detail += ": print exactly the keys your DELETE returned (RETURNING key)"
		}
	default:
		f.Passed, f.Detail = true, fmt.Sprintf("printed %q", clip(printed[di]))
	}
	out = append(out, f)
	ki, kNames := find("kept")
	f = Finding{What: "the kept: line names the keys the database still has", line: true}
	withoutGuard := slices.DeleteFunc(slices.Clone(keptNames), func(k string) bool { return k == oldLocked })
	switch {
	case ki < 0:
		f.Detail = fmt.Sprintf("no line starts with kept: the database still has %s; print them as kept: [...] (SELECT key FROM idempotency_keys)", listOrNone(keptNames))
	case slices.Equal(kNames, keptNames) || m == ProgramMode && slices.Equal(kNames, withoutGuard):
		f.Passed, f.Detail = true, fmt.Sprintf("printed %q", clip(printed[ki]))
	default:
		f.Detail = fmt.Sprintf("the database still has %s, but your program printed %q: print the keys left after your DELETE (SELECT key FROM idempotency_keys)", listOrNone(keptNames), clip(printed[ki]))
	}
	out = append(out, f)
	for i, l := range printed {
		if i != di && i != ki {
			out = append(out, Finding{What: "the two lines and no others", Detail: fmt.Sprintf("also printed %q: print only deleted: and kept:", clip(l)), line: true})
			break
		}
	}

	// The keys.
	never := func(k string) string {
		return fmt.Sprintf("your program never inserted %s: insert the lesson's three keys, %s, %s and %s, first, as cleanup.js does", k, oldCompleted, newCompleted, oldStuck)
	}
	mustGo := func(k, what, why string) {
		f := Finding{What: k + " (" + what + ") is deleted"}
		r, still := left[k]
		switch {
		case still:
			f.Detail = fmt.Sprintf("the database still has it (%s): %s", r, why)
		case !existed(k):
			f.Detail = never(k)
		default:
			f.Passed, f.Detail = true, "the database shows it deleted"
		}
		out = append(out, f)
	}
	mustStay := func(k, what, why string) {
		f := Finding{What: k + " (" + what + ") is kept"}
		_, still := left[k]
		switch {
		case still:
			f.Passed, f.Detail = true, "the database still has it"
		case !existed(k):
			f.Detail = never(k)
		case deletedEv[k] || !truncated:
			f.Detail = "your clean-up deleted it: " + why
		default:
			f.Detail = "the table was emptied (TRUNCATE): delete only what the rule allows, and leave the rest: " + why
		}
		out = append(out, f)
	}
	mustGo(oldCompleted, "completed, two days old", "a completed key older than 24 hours must go")
	mustGo(oldStuck, "in progress, two days old, its lock expired", "its lock expired long ago, so no request can still hold it")
	mustStay(newCompleted, "completed an hour ago", "it is an hour old, and keys are kept for 24 hours")
	guard := "the lab's: in progress, old, its lock still valid"
	if m == SQLMode {
		guard = "in progress, two days old, its lock still valid"
	}
	mustStay(oldLocked, guard, "it is old, but its lock is still valid, so a request may still be working on it")
	return out
}

var keyTokenRE = regexp.MustCompile(`[A-Za-z0-9_-]+`)

func listOrNone(keys []string) string {
	switch n := len(keys); {
	case n == 0:
		return "no key"
	case n == 1:
		return keys[0]
	case n > maxListed:
		return strings.Join(keys[:maxListed], ", ") + fmt.Sprintf(" and %d more", n-maxListed)
	}
	return strings.Join(keys[:len(keys)-1], ", ") + " and " + keys[len(keys)-1]
}

// maxListed is how many keys a finding names; a statement may leave
// 100,000, and a finding is one line.
const maxListed = 10

// clip shortens a printed line quoted in a finding to its first 200
// characters.
func clip(line string) string {
	if r := []rune(line); len(r) > 200 {
		return string(r[:200]) + "…"
	}
	return line
}
