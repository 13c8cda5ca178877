package bench

import (
	"strings"
	"testing"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/idem"
)

// TestScriptsRunTheServersStatements: the pgbench scripts are the
// server's own statements, every parameter bound, the claim on its own
// before the transaction and the completion inside it; the keyless one is
// the same transfer without either.
func TestScriptsRunTheServersStatements(t *testing.T) {
	words := func(sql string) string { return strings.Fields(sql)[0] + " " + strings.Fields(sql)[1] }
	for _, s := range []string{scriptKeyed, scriptKeyless} {
		if strings.Contains(s, "$") {
			t.Errorf("an unbound parameter:\n%s", s)
		}
		for _, stmt := range []string{bank.LockAccountsSQL, bank.DebitSQL, bank.CreditSQL, bank.RecordSQL} {
			if !strings.Contains(s, words(stmt)) {
				t.Errorf("missing %q:\n%s", words(stmt), s)
			}
		}
	}
	claim, begin, complete := strings.Index(scriptKeyed, "INSERT INTO idempotency_keys"), strings.Index(scriptKeyed, "BEGIN;"), strings.Index(scriptKeyed, "UPDATE idempotency_keys")
	if claim < 0 || complete < 0 || !(claim < begin && begin < complete) {
		t.Errorf("the keyed script must claim before BEGIN and complete inside the transaction:\n%s", scriptKeyed)
	}
	if !strings.Contains(scriptKeyed, bind(idem.CompleteSQL, "1", keyExpr, "'l'", "200", "'{}'")) {
		t.Errorf("the completion is not idem's own statement:\n%s", scriptKeyed)
	}
	if strings.Contains(scriptKeyless, "idempotency_keys") {
		t.Errorf("the keyless script touches the keys:\n%s", scriptKeyless)
	}
}

func TestRatiosAreNumbersAgainstTargets(t *testing.T) {
	rs := ratios([]Result{
		{Kind: SQLKeyed, Throughput: 700}, {Kind: SQLKeyless, Throughput: 1000},
		{Kind: Fresh, Throughput: 560, P99: 12, Requests: 10}, {Kind: Replays, Throughput: 1500}, {Kind: NoKey, Throughput: 800},
	})
	by := map[string]Ratio{}
	for _, r := range rs {
		by[r.Name] = r
	}
	if r := by["key over HTTP / key in SQL"]; !r.Available || r.Value != 1 || !r.Met {
		t.Errorf("HTTP keeps the SQL key ratio (0.70 / 0.70): %+v", r)
	}
	if r := by["safe HTTP / keyed pgbench"]; r.Value != 0.8 || !r.Met {
		t.Errorf("%+v", r)
	}
	if r := by["p99 of fresh safe transfers, ms"]; !r.Ceiling || !r.Met {
		t.Errorf("%+v", r)
	}
	missing := ratios([]Result{{Kind: Fresh, Throughput: 560}})
	for _, r := range missing {
		if r.Name == "key over HTTP / key in SQL" && (r.Available || r.Met) {
			t.Errorf("a ratio without its modes: %+v", r)
		}
	}
}
