package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/zudojs/bank/idem"
)

// Every error the API sends is RFC 9457 problem details whose type is
// /problems/{code} (idem.ProblemTypes): the API serves each type's
// documentation there, as plain text, so that the type resolves, as RFC
// 9457 §3.1.1 encourages, on the server that sent it. bank help serve
// has the same table.

// ProblemDoc documents one problem type: the status it comes with, what
// it means, and what a client should do.
type ProblemDoc struct {
	Code   string
	Status int
	Means  string
	Do     string
}

// ProblemDocs are the API's problem types, in the order bank help serve
// lists them.
var ProblemDocs = []ProblemDoc{
	{"invalid_json", 400, "the body is not one JSON object, has data after it, or has a field other than from, to and amountKobo", "fix the request"},
	{"idempotency_key_required", 400, "no Idempotency-Key, or a key shorter than 16 characters or with characters other than letters, digits, - or _", "fix the request: make one key per intent and send it with every retry"},
	{"idempotency_key_too_long", 400, "an Idempotency-Key longer than 64 characters", "send a key of 16 to 64 letters, digits, - or _ (a UUID is 36)"},
	{"idempotency_key_invalid", 400, "the Idempotency-Key field is not one key: sent on two lines, or neither a bare key nor one quoted string (RFC 8941)", "send the field once, bare (abc…) or quoted (\"abc…\")"},
	{"invalid_account", 400, "from or to is not a whole number", "fix the request"},
	{"invalid_amount", 400, "amountKobo is not a whole number of kobo above 0", "fix the request"},
	{"key_required", 400, "GET /transfers without ?key=", "add the key of the transfer"},
	{"invalid_key", 400, "a ?key= that cannot name a transfer", "use the Idempotency-Key the transfer was sent with"},
	{"unauthorized", 401, "no bearer token, or an unknown one", "send Authorization: Bearer token-ada (or token-bola, token-chidi)"},
	{"account_not_found", 404, "the account does not exist, or is not the caller's", "do not retry"},
	{"transfer_not_found", 404, "no such transfer, or it was sent from another user's account", "do not retry"},
	{"key_not_found", 404, "no transfer was received under this key (never arrived, or released after an error)", "it is safe to send it again, with its key"},
	{"not_found", 404, "no such endpoint", "see bank help serve"},
	{"method_not_allowed", 405, "the endpoint does not take this method; Allow lists those it takes", "fix the request"},
	{"request_in_progress", 409, "an earlier copy of this request, under this key, is still being processed", "retry with the same key after Retry-After"},
	{"body_too_large", 413, "the body is over 16 KiB", "fix the request"},
	{"unsupported_media_type", 415, "the body has a Content-Encoding (gzip, …); the API reads plain JSON", "send the body uncompressed"},
	{"same_account", 422, "from equals to", "do not retry"},
	{"account_not_active", 422, "the sender's account is frozen or closed", "do not retry"},
	{"recipient_unavailable", 422, "the recipient does not exist, or is frozen or closed", "do not retry"},
	{"insufficient_funds", 422, "the balance is too low for this transfer", "do not retry"},
	{"idempotency_key_reused", 422, "this key was used with a different request", "a new intent needs a new key"},
	{"rate_limited", 429, "over the rate limit for this user; never stored under the key", "retry with the same key after Retry-After"},
	{"internal_error", 500, "something unexpected failed; nothing was stored under the key, which was released", "retry with the same key"},
	{"service_unavailable", 503, "the database cannot be reached; nothing was stored under the key", "retry with the same key after Retry-After"},
}

// LookupProblem finds the documentation of a problem type by its code.
func LookupProblem(code string) (ProblemDoc, bool) {
	for _, d := range ProblemDocs {
		if d.Code == code {
			return d, true
		}
	}
	return ProblemDoc{}, false
}

// Text is the page GET /problems/{code} answers.
func (d ProblemDoc) Text() string {
	return fmt.Sprintf("%s%s: %s (%d %s)\n\nIt means: %s.\nWhat to do: %s.\n\nbank serve's error bodies are RFC 9457 problem details, "+
		"\"type\": \"%s%s\", with the lesson's \"error\" and \"message\" as extension members; every type: GET /problems, or bank help serve.\n",
		idem.ProblemTypes, d.Code, idem.Title(d.Code), d.Status, http.StatusText(d.Status), d.Means, d.Do, idem.ProblemTypes, d.Code)
}

// problemPage is GET /problems/{code}: the documentation of one type.
func problemPage(w http.ResponseWriter, r *http.Request) {
	d, ok := LookupProblem(r.PathValue("code"))
	if !ok {
		problem(w, http.StatusNotFound, "not_found", "no such problem type: GET /problems lists them")
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, d.Text())
}

// problemIndex is GET /problems: every type, one a line.
func problemIndex(w http.ResponseWriter, _ *http.Request) {
	var b strings.Builder
	b.WriteString("The problem types of bank serve (RFC 9457), by status:\n\n")
	for _, d := range ProblemDocs {
		fmt.Fprintf(&b, "  %d %-36s %s\n", d.Status, idem.ProblemTypes+d.Code, idem.Title(d.Code))
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, b.String())
}
