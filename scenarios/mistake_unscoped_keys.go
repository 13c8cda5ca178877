package scenarios

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/mistakes"
	"github.com/zudojs/bank/scenarios/lab/mistakes/onpurpose"
)

// UnscopedKeys: keys stored without their user. The broken server checks
// the fingerprint as it should; only the user is missing from the key.
// Bola's own transfer, sent under the key string Ada happened to use, is
// refused as a reused key, and a copy of Ada's request sent by Bola under
// her key string matches her fingerprint: he gets her stored answer, her
// transfer and her balance.
var UnscopedKeys = &lab.Mistake{
	Mistake: mistakes.Must("unscoped-keys"),
	Happens: "one user can fetch another user's stored response by sending their key",
	Fix:     "keys stored under (user, key): Bola's key is his own",
	Why:     "keys are looked up by their string alone, whoever sends them. This server checks the request's fingerprint, as it should: only the user is missing from the key. Bola's own transfer, under the key string Ada used, is a different request under a stored key: refused with 422, never made. And Bola's copy of Ada's request, under her key string, is the same request: the server replays her stored answer to him, her transfer and her balance.",
	Holds:   "the server looks a key up by user and key string together. Bola's key string is his own: his transfer is claimed and made. His copy of Ada's request, under the same string, meets his own key, which holds his ₦1,000 request: refused with 422, with nothing of Ada's in it.",
	Blind: map[lab.Check]string{
		lab.TotalKept:    "a transfer that never happens moves no money, and an answer shown to the wrong user is not money",
		lab.LedgerAgrees: "nothing moved for Bola, so the books agree",
	},
	Explain: map[string]string{
		"two users, one key string": "Ada sends ₦10,000 to Bola under the key tap-2026-09-24-0001. Bola's app makes the same key string for his ₦1,000 to Ada; then Bola, who has seen Ada's key, sends a copy of her request under it, and once more under a key string of his own.",
	},
	Steps: func(ctx context.Context, lab *lab.Lab, broken bool) error {
		leaks := 0
		lab.Intent("Ada's ₦10,000", 1, 2, 1_000_000, 1)
		lab.Intent("Bola's ₦1,000", 2, 1, 100_000, 1).BrokenIf(broken)
		lab.Effect("Ada's stored answer shown to Bola", 0, func(context.Context) (int, error) { return leaks, nil }).BrokenIf(broken)
		var h api.Handler = &api.Transfers{DB: lab.DB, Keys: lab.Keys(&idem.Store{})}
		if broken {
			h = &onpurpose.StoredKeys{DB: lab.DB, Mistake: onpurpose.Unscoped, Observe: lab.KeySteps()}
		}
		server := lab.Server("server", h)
		lab.Step("two users, one key string")
		const key = "tap-2026-09-24-0001"
		for _, c := range []struct {
			who  string
			user int64
			key  string
			body string
		}{
			{"Ada sends ₦10,000 to Bola", 1, key, adaPaysBola},
			{"Bola sends ₦1,000 to Ada (his app made the same key string)", 2, key, `{"from": 2, "to": 1, "amountKobo": 100000}`},
			{"Bola sends a copy of Ada's request (₦10,000 from her account 1)", 2, key, adaPaysBola},
			// What stops him when the key string is new to the bank: the
			// transfer itself, which checks whose account pays.
			{"Bola sends the copy again under a key string no one has used", 2, "tap-2026-09-24-0099", adaPaysBola},
		} {
			r := server.Send(ctx, api.Call{UserID: c.user, Key: c.key, Body: []byte(c.body), Now: lab.Clock.Now()})
			whose := ""
			if b := adasBalanceIn(r.Body); c.user != 1 && b != "" {
				leaks++
				whose = "; Bola now sees Ada's balance: " + b
			}
			lab.Reply(r, "%s, key %s: %d%s %s%s", c.who, c.key, r.Status, replayedNote(r.Replayed), receiptText(r.Body), whose)
			if c.key != key && r.Status == http.StatusNotFound {
				lab.Say("(a transfer shows a user only his own accounts: to Bola, Ada's account 1 does not exist, so a copy of her request moves nothing; what keeps her stored answer from him is the key store, which must look keys up per user.)")
			}
		}
		lab.Balances(ctx, "")
		return nil
	},
}

// adasBalanceIn is Ada's balance, when the answer is a transfer from her
// account 1 (which carries its sender's balance), or "".
func adasBalanceIn(body []byte) string {
	var r struct {
		From        int64  `json:"from"`
		BalanceKobo *int64 `json:"balanceKobo"`
	}
	if json.Unmarshal(body, &r) != nil || r.From != 1 || r.BalanceKobo == nil {
		return ""
	}
	return bank.Naira(*r.BalanceKobo)
}
