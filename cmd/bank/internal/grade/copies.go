package grade

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/cmd/bank/internal/grade/record"
)

func doubleTap(t *trial) { copies(t, 2, "grade-doubletap-01") }

func storm(t *trial) { copies(t, 50, "grade-storm-000001") }

// copies sends n copies of one request at once: money must move once,
// and each copy gets the transfer's 201 or a 409 to retry later. Where
// the server keeps its keys in tables of its own, the race is forced,
// not left to timing: the grader locks those tables against writes until
// the copies wait to write (each has made whatever check it makes by
// then), then lets them all go at once, so a check-then-insert loses
// every time.
//
// It is long because the forced race is three moves that must happen in
// order (lock the server's tables, line the copies up, let them go), each
// with the fallback for a server that keeps its keys elsewhere.
func copies(t *trial, n int, key string) {
	r := t.adaPaysBola(key)
	replies := make([]reply, n)
	var wg sync.WaitGroup
	var answered atomic.Int64
	start := make(chan struct{})
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			replies[i] = t.sendQuiet(r)
			answered.Add(1)
		}()
	}
	tables := t.ownTables()
	list := strings.Join(tables, ", ")
	us, unlock := 0, func() {}
	if len(tables) > 0 {
		// SHARE lets every copy look (SELECT) but no copy write: each
		// waits at its first write to the key table, after any check it
		// makes, so all of them have looked before any has claimed.
		pid, rel, err := t.hold(list, "LOCK TABLE … IN SHARE MODE", "SET LOCAL lock_timeout = '5s'", "LOCK TABLE "+list+" IN SHARE MODE")
		if err == nil {
			us, unlock = pid, rel
			defer rel() // once: a check ended early (an abort) must not keep its session
		} else {
			t.note("the grader could not lock the server's own tables (%s): %v; the copies race as they come", list, err)
		}
	}
	t.rec.BurstStart()
	defer t.rec.BurstEnd() // once: a check ended early (an abort) draws what it had
	close(start)
	if us != 0 {
		waiting := t.waitLinedUp(us, func() bool { return answered.Load() == int64(n) }, n, 5*time.Second)
		if waiting > 0 {
			t.rec.Arrow(serverName(0), record.ActorDB, fmt.Sprintf("%d sessions wait to write its own tables", waiting), "in-progress")
		}
		unlock()
		if waiting > 0 {
			t.note("the grader let the copies read the server's own tables (%s) but not write them (a SHARE lock) until %d of them waited to write, then let them all go at once", list, waiting)
		} else {
			t.note("the copies never waited on the server's own tables (%s): they raced as they came, so this check only samples the race", list)
		}
	} else if len(tables) == 0 {
		t.note("the server keeps no table of its own in the database, so the grader cannot line the copies up: they race as they come, and this check only samples the race (run it again to sample more)")
	}
	wg.Wait()
	t.rec.BurstEnd()
	tally := map[string]int{}
	var order []string
	created, bad := 0, ""
	var ids []int64
	for _, got := range replies {
		s := got.short()
		if tally[s] == 0 {
			order = append(order, s)
		}
		tally[s]++
		switch {
		case got.Status == 201:
			created++
			ids = append(ids, got.TransferID)
		case got.Status == 409:
		default:
			bad = s
		}
	}
	line := fmt.Sprintf("%d copies of POST /transfers as ada, key %s, %s →", n, key, r.body)
	for _, s := range order {
		line += fmt.Sprintf(" %d × %s;", tally[s], s)
	}
	t.note("%s", line[:len(line)-1])
	moved := t.count(1, 2, tenThousand)
	keyKept := slices.ContainsFunc(replies, func(r reply) bool { return r.Status == 409 || r.Replayed })
	if moved > 1 && !keyKept {
		// Did they all run because nothing looks at the key, or because
		// they all looked before any claimed it? One more copy, now that
		// they are done, tells.
		later := t.send(r)
		keyKept = later.Replayed || later.Status == 409 || later.Status == 201 && t.count(1, 2, tenThousand) == moved
	}
	switch {
	case moved > 1 && !keyKept:
		t.failAs(mNoIdempotency, "the copies ran the transfer %s, and even a copy sent after them ran again: the server does not look at the key at all", bank.Times(moved))
	case moved > 1:
		t.failAs(mCheckThenInsert, "the copies ran the transfer %s, though the server does keep keys (a copy got 409 or a replay): they all looked for it before any had claimed it; the claim is not atomic", bank.Times(moved))
	case bad != "":
		t.fail("a copy got %s: each copy should get the transfer's 201 (or its replay) or a 409 to retry later", bad)
	case created == 0:
		t.fail("no copy got 201")
	}
	for _, id := range ids {
		if id != ids[0] {
			t.fail("the 201s name different transfers (%d and %d)", ids[0], id)
			break
		}
	}
	t.passed("money moved once:%s", line[strings.Index(line, "→")+len("→"):len(line)-1])
}

// waitLinedUp waits until the sessions waiting on a lock held by session
// pid stop growing in number (all n of them, or as many as the server's
// connection pool lets wait), or every request was answered, or the
// bound; it returns how many waited.
func (t *trial) waitLinedUp(pid int, allAnswered func() bool, n int, bound time.Duration) int {
	deadline := time.Now().Add(bound)
	last, since := 0, time.Now()
	for time.Now().Before(deadline) && !allAnswered() {
		var waiting int
		t.must(t.db.QueryRow(t.ctx, "SELECT count(*) FROM pg_stat_activity WHERE $1::int = ANY (pg_blocking_pids(pid))", pid).Scan(&waiting))
		if waiting != last {
			last, since = waiting, time.Now()
		}
		if waiting >= n || (waiting > 0 && time.Since(since) > 300*time.Millisecond) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return last
}

func crash(t *trial) {
	r := t.adaPaysBola("grade-crash-000001")
	blocked, p, release, ok := t.blockOnAdasRow(r, "the transfer")
	defer release()
	if !ok {
		return
	}
	claimBy := time.Now() // the transfer waits: its key was claimed before
	t.kill(0)
	t.note("the server's session waits on Ada's row: the server is killed (SIGKILL)")
	t.await(p, 10*time.Second)
	release()
	if !t.waitGone(blocked, 10*time.Second) {
		t.note("the killed server's database session is still there after 10 s")
	}
	t.must(t.restart(0))
	t.note("the server is started again")
	// Killed before its transfer committed, the request left nothing but
	// its claim: a second transfer here means the first was not one
	// transaction.
	if t.retryGetsStored(r, nil, claimBy, "the crash", mTransfer) {
		t.passed("the retry after the crash got 201; money moved once")
	}
}

// blockOnAdasRow locks Ada's account row, sends r in the background, and
// waits until the server's session waits on that row: the moment a fault
// is thrown at. It returns that session, the pending request and the
// row's release; ok is false, and the check failed, when the transfer
// never waited on the row.
func (t *trial) blockOnAdasRow(r request, who string) (blocked int, p *pending, release func(), ok bool) {
	us, release := t.holdRow()
	t.note("the grader locks Ada's account row, so %s will wait on it", who)
	p = t.async(r)
	if blocked = t.waitBlocked(us, p, 10*time.Second); blocked == 0 {
		release()
		got, _ := t.await(p, 10*time.Second)
		t.fail("the transfer never waited on Ada's account row (it answered %s): it does not lock or update the sender's account", got.short())
		return 0, p, release, false
	}
	t.rec.Arrow(serverName(r.server), record.ActorDB, "waits on Ada's row, which the grader holds", "in-progress")
	return blocked, p, release, true
}
