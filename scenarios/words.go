package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/bank/client"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
)

// What several lessons share: the lesson's request, and the wording of a
// reply, a replay, a retry, a duration or a list in a transcript. One
// place, so that the same thing is always said the same way.

func replayedWord(replayed bool) string {
	if replayed {
		return "replayed"
	}
	return ""
}

func replayedNote(replayed bool) string {
	if replayed {
		return " (replayed)"
	}
	return ""
}

// gotten is the error a step got instead of the one the story needed,
// for a harness error that wraps it (a story cut short by Ctrl-C ends
// with the interrupt): "no error" when there was none.
func gotten(err error) error {
	if err == nil {
		return errors.New("no error")
	}
	return err
}

func list(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// The harness's own words, under the names the lessons use.
var (
	transferLabel   = lab.TransferLabel
	errorOrOK       = lab.ErrorOrOK
	human           = lab.Human
	willRetry       = lab.WillRetry
	errLostResponse = lab.ErrLostResponse
	keyName         = lab.KeyName
)

// serverLockTimeout is how long a server of the stories waits for a row
// lock before it gives up and answers 500 (its session's lock_timeout):
// one value, wherever a story holds a row to make a server fail.
const serverLockTimeout = "200ms"

// holder is the first name of an account's holder, as a line says it.
var holder = map[int64]string{1: "Ada", 2: "Bola", 3: "Chidi"}

// The diagrams' lanes for the app (the phone) and PostgreSQL.
const (
	phone    = lab.ActorApp
	postgres = lab.ActorDB
)

// answer is what the app received, as a response.
func answer(res client.Result) idem.Response {
	return idem.Response{Status: res.Status, Replayed: res.Replayed, Body: res.Body}
}

// serverError is what bank serve answers when a transfer failed for a
// reason that says nothing about the request (a lock timeout, a lost
// connection): 500, and the key released for a retry.
func serverError() idem.Response {
	return idem.Problem(http.StatusInternalServerError, "internal_error", "the transfer did not happen; retry with the same Idempotency-Key")
}

// receipt is a transfer's receipt, for a story in which the transfer must
// go through: a refusal or an error ends the story.
func receipt(l *lab.Lab) func(o bank.Outcome, err error) bank.Receipt {
	return func(o bank.Outcome, err error) bank.Receipt {
		l.Must(err)
		if o.Receipt == nil {
			l.Must(fmt.Errorf("the transfer was refused: %s", o.Refusal))
		}
		return *o.Receipt
	}
}

// nodeObject writes a flat JSON object the way the lesson's Node prints
// one with console.log (util.inspect): keys bare, strings in single
// quotes, one field a line, in the object's own order. Anything else is
// returned as it is.
func nodeObject(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return string(body)
	}
	var fields []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return string(body)
		}
		v, err := dec.Token()
		if err != nil {
			return string(body)
		}
		switch v := v.(type) {
		case string:
			fields = append(fields, fmt.Sprintf("  %s: '%s'", k, v))
		case json.Number, bool:
			fields = append(fields, fmt.Sprintf("  %s: %v", k, v))
		case nil:
			fields = append(fields, fmt.Sprintf("  %s: null", k))
		default:
			return string(body) // nested: not worth imitating
		}
	}
	return "{\n" + strings.Join(fields, ",\n") + "\n}"
}

// nodeObjectNote says, under a body printed by nodeObject, what a reader
// who has not seen Node's console.log needs: that it is the answer's JSON,
// why its fields come in that order, and whose balance balanceKobo is.
func nodeObjectNote(body []byte) string {
	var r struct {
		From        int64  `json:"from"`
		BalanceKobo *int64 `json:"balanceKobo"`
	}
	note := "  (the answer's JSON, printed as the lesson's Node.js code prints an object with console.log, field names bare; to comes before from because jsonb, the type PostgreSQL stored it as, keeps fields in an order of its own"
	if json.Unmarshal(body, &r) == nil && r.BalanceKobo != nil {
		note += fmt.Sprintf(". balanceKobo is %s's balance after the transfer, in kobo (100 kobo = ₦1): %s", holder[r.From], bank.Naira(*r.BalanceKobo))
	}
	return note + ".)"
}

// NodeList writes names the way Node prints an array of strings.
func NodeList(items []string) string {
	if len(items) == 0 {
		return "[]"
	}
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = "'" + s + "'"
	}
	return "[ " + strings.Join(quoted, ", ") + " ]"
}

// receiptText is a transfer's answer in words, the same however the body
// was stored (the API's order, or jsonb's): "transfer 1, ₦10,000 from
// account 1 to 2"; an error's code otherwise.
func receiptText(body []byte) string {
	var r struct {
		TransferID int64 `json:"transferId"`
		From       int64 `json:"from"`
		To         int64 `json:"to"`
		AmountKobo int64 `json:"amountKobo"`
	}
	if json.Unmarshal(body, &r) != nil || r.TransferID == 0 {
		return errorOrOK(body)
	}
	return fmt.Sprintf("transfer %d, %s from account %d to %d", r.TransferID, bank.Naira(r.AmountKobo), r.From, r.To)
}

// rolledBack says which transfer ids were taken and then undone with
// their transaction (a sequence is never rolled back, so a gap in the ids
// is a transfer that ran and did not stand), or "" when there is none.
func rolledBack(ctx context.Context, lab *lab.Lab) string {
	var gone []string
	rows, err := lab.DB.Query(ctx, `SELECT g.n::text FROM generate_series(1, (SELECT last_value FROM transfers_id_seq)) AS g(n)
		WHERE (SELECT is_called FROM transfers_id_seq) AND NOT EXISTS (SELECT 1 FROM transfers t WHERE t.id = g.n) ORDER BY g.n`)
	lab.Must(err)
	gone, err = pgx.CollectRows(rows, pgx.RowTo[string])
	lab.Must(err)
	switch len(gone) {
	case 0:
		return ""
	case 1:
		return "transfer id " + gone[0] + " was taken by a transfer that rolled back"
	}
	return "transfer ids " + list(gone) + " were taken by transfers that rolled back"
}

// adaPaysBola is the lesson's request: Ada sends Bola ₦10,000.
const adaPaysBola = `{"from": 1, "to": 2, "amountKobo": 1000000}`

// lessonLock is the lesson's lock TTL, 30 s: how long a claim holds its
// key before a retry may take it over, in every story that does not
// change it on purpose.
const lessonLock = idem.DefaultLockTTL

// sendAndShow: the app sends body with a new key, and shows what came back.
func sendAndShow(ctx context.Context, lab *lab.Lab, app *client.Client, body string) {
	res, err := app.Send(ctx, lab.NewKey(), []byte(body))
	lab.Must(err)
	lab.Reply(answer(res), "app shows: %s", transferLabel(res.Body))
}
