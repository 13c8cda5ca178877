package api

import (
	"bytes"
	"context"
	"encoding/json"
	"math/big"
	"net/http"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/idem"
)

// Transfer is POST /transfers without the key store: it reads the body,
// runs the bank's transfer and returns what the API answers (201 and the
// receipt, or a refusal's status and problem body). Run it inside a
// transaction; an error means nothing may be answered and the transaction
// must roll back.
func Transfer(ctx context.Context, tx bank.DB, userID int64, body []byte) (idem.Response, error) {
	r, refused := ParseRequest(body)
	if refused != nil {
		return *refused, nil
	}
	o, err := bank.Transfer(ctx, tx, userID, r)
	if err != nil {
		return idem.Response{}, err
	}
	return Answer(o), nil
}

// ParseRequest reads a JSON body such as {"from":1,"to":2,"amountKobo":1000000}
// into the bank's request, or returns the refusal the API answers.
// Accounts must be whole numbers and the amount a whole number of kobo
// that fits in int64: 10.5, "100", 1e400 and 2^63 are all refused, never
// rounded or wrapped. The bank's own rules (an amount above zero, two
// different accounts) are checked here too, so that what is parsed is a
// request the bank could carry out.
func ParseRequest(body []byte) (bank.Request, *idem.Response) {
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&fields); err != nil || fields == nil || dec.More() {
		resp := idem.Problem(http.StatusBadRequest, "invalid_json", "the body must be one JSON object such as {\"from\":1,\"to\":2,\"amountKobo\":1000000}")
		return bank.Request{}, &resp
	}
	var r bank.Request
	var okFrom, okTo bool
	r.From, okFrom = wholeNumber(fields["from"], 1<<53-1)
	r.To, okTo = wholeNumber(fields["to"], 1<<53-1)
	// An amount that is not a whole number fitting int64 reads as 0, no
	// amount at all: the bank refuses it as invalid_amount, in its words.
	r.AmountKobo, _ = wholeNumber(fields["amountKobo"], 1<<63-1)
	if !okFrom || !okTo {
		resp := idem.Problem(http.StatusBadRequest, "invalid_account", "from and to must be account numbers")
		return r, &resp
	}
	if refused := r.Validate(); refused != nil {
		resp := Answer(bank.Outcome{Refusal: refused})
		return r, &resp
	}
	return r, nil
}

// wholeNumber accepts a JSON number (not a string) that is an integer of
// magnitude at most limit; anything else is (0, false).
func wholeNumber(raw json.RawMessage, limit int64) (int64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || !(raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		return 0, false
	}
	if len(raw) > 400 { // far past any int64, in any notation
		return 0, false
	}
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return 0, false
	}
	r, ok := new(big.Rat).SetString(n.String())
	if !ok || !r.IsInt() || r.Num().CmpAbs(big.NewInt(limit)) > 0 {
		return 0, false
	}
	return r.Num().Int64(), true
}

// receipt is the body of a 201: the bank's receipt as the API writes it.
type receipt struct {
	TransferID  int64 `json:"transferId"`
	From        int64 `json:"from"`
	To          int64 `json:"to"`
	AmountKobo  int64 `json:"amountKobo"`
	BalanceKobo int64 `json:"balanceKobo"`
}

// refusalStatus is the HTTP status the API answers a refusal of the bank
// with: 400 for an amount that is no amount, 404 for an account the user
// cannot see, and 422 for a request understood and refused by a rule.
func refusalStatus(code bank.Code) int {
	switch code {
	case bank.InvalidAmount:
		return http.StatusBadRequest
	case bank.AccountNotFound:
		return http.StatusNotFound
	default: // same_account, account_not_active, recipient_unavailable, insufficient_funds
		return http.StatusUnprocessableEntity
	}
}

// Answer is what the API sends for the bank's outcome: 201 and the
// receipt, or the refusal's status and problem body. The zero outcome,
// which comes with an error, answers nothing (the zero Response).
func Answer(o bank.Outcome) idem.Response {
	switch {
	case o.Receipt != nil:
		body, _ := json.Marshal(receipt(*o.Receipt))
		return idem.Response{Status: http.StatusCreated, Body: body}
	case o.Refusal != nil:
		return idem.Problem(refusalStatus(o.Refusal.Code), string(o.Refusal.Code), o.Refusal.Message)
	}
	return idem.Response{}
}
