package grade

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/zudojs/bank/bank/client"
	"github.com/zudojs/bank/cmd/bank/internal/grade/record"
)

// Users, by their bearer tokens.
var tokens = map[string]string{"ada": "token-ada", "bola": "token-bola", "chidi": "token-chidi"}

// wire is what a check's recorder needs of the lesson's API to label what
// its proxy sees.
var wire = record.Wire{Tokens: tokens, Body: body, ErrorCode: func(body string) string { code, _ := errorOf(body); return code }}

// reply is what came back to the grader's client.
type reply struct {
	Status     int
	Replayed   bool
	RetryAfter string
	Body       string
	Lost       bool // no answer: the connection closed (or the proxy lost it)
	TransferID int64
}

// short is the status and whether it was a replay.
func (r reply) short() string {
	switch {
	case r.Lost:
		return "no answer"
	case r.Replayed:
		return strconv.Itoa(r.Status) + " replayed"
	}
	return strconv.Itoa(r.Status)
}

func (r reply) String() string {
	if r.Lost {
		return "no answer (the connection closed)"
	}
	s := strconv.Itoa(r.Status)
	if r.Replayed {
		s += " (Idempotent-Replayed: true)"
	}
	if r.RetryAfter != "" {
		s += " Retry-After: " + r.RetryAfter
	}
	body := r.Body
	if code, text := errorOf(body); len(body) > 160 && code != "" {
		// A long error body, such as problem details: what it says.
		body = code + ": " + text
	}
	if len(body) > 160 {
		body = body[:160] + "…"
	}
	return s + " " + body
}

// errorOf reads an error body of either shape the contract takes: the
// lesson's {"error":"code","message":"…"}, or RFC 9457 problem details
// ({"type","title","detail",…}, often with a code of its own). It
// returns "" when the body is neither.
func errorOf(body string) (code, text string) {
	var e struct {
		Error   any    `json:"error"`
		Message string `json:"message"`
		Code    any    `json:"code"`
		Type    string `json:"type"`
		Title   string `json:"title"`
		Detail  string `json:"detail"`
	}
	if json.Unmarshal([]byte(body), &e) != nil {
		return "", ""
	}
	for _, c := range []any{e.Error, e.Code} {
		if s, ok := c.(string); ok && s != "" {
			code = s
			break
		}
	}
	if code == "" {
		code = e.Type
	}
	if code == "" {
		code = e.Title
	}
	text = e.Message
	if text == "" {
		text = e.Detail
	}
	if text == "" {
		text = e.Title
	}
	return code, text
}

// definitive is an answer a client may act on: not a lost reply, not
// "in progress", not a server error.
func (r reply) definitive() bool {
	return !r.Lost && r.Status != 409 && r.Status != 429 && r.Status < 500
}

// request is one POST /transfers.
type request struct {
	server int    // which instance, through its proxy
	user   string // ada, bola or chidi
	key    string // "" sends no Idempotency-Key
	body   string
}

var httpClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxResponseHeaderBytes: maxBody}}

// send makes one request, records it in the evidence, and returns the reply.
func (t *trial) send(r request) reply {
	got := t.sendQuiet(r)
	t.note("%s", t.describe(r, got))
	return got
}

// sendFirst sends the first request under a key, which a good server
// answers with its definitive answer. A request slower than the key's
// lock may be fenced by the server itself: its lock expired before its
// commit, so its work rolled back and it said 409, as the lesson's
// design does on a slow machine. The grader then does what a client
// does, and resends with the same key until a definitive answer, which
// stands for the first. The request's own duration is the witness: a
// 409 that came sooner is the server's answer, and stands.
func (t *trial) sendFirst(r request) reply {
	start := time.Now()
	got := t.send(r)
	took := time.Since(start)
	if got.Status != 409 || took < t.cfg.LockTTL {
		return got
	}
	t.note("the request took %s, longer than the key's lock (LOCK_TTL_MS=%d): a 409 then is the server fencing its own late work, as it should; the grader resends it, as a client would", took.Round(100*time.Millisecond), t.cfg.LockTTL.Milliseconds())
	settled, _ := t.settle(r, t.cfg.LockTTL+t.bound(5*time.Second))
	t.note("%s", t.describe(r, settled))
	return settled
}

func (t *trial) describe(r request, got reply) string {
	key := "no key"
	if r.key != "" {
		key = "key " + client.KeyField(r.key, t.cfg.keys.quoted)
	}
	return fmt.Sprintf("POST /transfers to %s as %s, %s, %s → %s", serverName(r.server), r.user, key, r.body, got)
}

// sendQuiet is send without the evidence line (for storms), with the key
// in the form the server takes.
func (t *trial) sendQuiet(r request) reply {
	return t.post(r, t.cfg.keys.quoted)
}

// post sends r, its key bare or quoted.
func (t *trial) post(r request, quoted bool) reply {
	req, err := http.NewRequestWithContext(t.ctx, "POST", t.proxies[r.server].URL()+"/transfers", strings.NewReader(r.body))
	if err != nil {
		return reply{Lost: true}
	}
	req.GetBody = nil // every attempt is the grader's own: see proxy.ServeHTTP
	req.Header.Set("Authorization", "Bearer "+tokens[r.user])
	req.Header.Set("Content-Type", "application/json")
	if r.key != "" {
		req.Header.Set("Idempotency-Key", client.KeyField(r.key, quoted))
	}
	return do(req)
}

// keyForm is how the grader writes its keys for the server it grades:
// bare, as the lesson does (Idempotency-Key: grade-plain-0000001), unless
// the server refuses a bare key and takes the IETF draft's quoted form
// (Idempotency-Key: "grade-plain-0000001"). The first check of a run
// finds out (probeKeyForm); the rest of the run sends that form.
type keyForm struct {
	decided, quoted bool
}

// probeKeyForm asks the server which form of the key it takes, before
// the first check of a run: Bola asks to send more than she has, with
// her key bare, a request refused whatever the key (and that the CHECK on
// balances keeps from moving money). A 400 to it, where the same request
// with its key quoted is not a 400, means the server wants the draft's
// form. Anything else leaves the lesson's bare form, and says nothing.
func (t *trial) probeKeyForm() {
	k := t.cfg.keys
	k.decided = true
	t.rec.Line("the run's first check: which form of key does the server take?")
	r := request{user: "bola", key: "grade-keyform-00001", body: body(2, 1, 100_000_000)}
	bare := t.post(r, false)
	if bare.Lost || bare.Status != 400 {
		return
	}
	quoted := t.post(r, true)
	if quoted.Lost || quoted.Status == 400 {
		return
	}
	k.quoted = true
	t.note("POST /transfers as bola, key %s, %s → %s", r.key, r.body, bare)
	t.note("POST /transfers as bola, key %s, %s → %s", client.KeyField(r.key, true), r.body, quoted)
	t.note("the server refused the key sent bare and took it quoted, as the IETF draft writes it: the grader sends every key quoted from here on")
}

func do(req *http.Request) reply {
	resp, err := httpClient.Do(req)
	if err != nil {
		return reply{Lost: true}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return reply{Lost: true}
	}
	got := reply{Status: resp.StatusCode, Body: string(bytes.TrimSpace(b)),
		Replayed: strings.EqualFold(resp.Header.Get("Idempotent-Replayed"), "true"), RetryAfter: resp.Header.Get("Retry-After")}
	var receipt struct {
		TransferID int64 `json:"transferId"`
	}
	if json.Unmarshal(b, &receipt) == nil {
		got.TransferID = receipt.TransferID
	}
	return got
}

// get makes one GET through instance 0's proxy.
func (t *trial) get(user, path string) reply {
	req, err := http.NewRequestWithContext(t.ctx, "GET", t.proxies[0].URL()+path, nil)
	if err != nil {
		return reply{Lost: true}
	}
	req.Header.Set("Authorization", "Bearer "+tokens[user])
	got := do(req)
	t.note("GET %s as %s → %s", path, user, got)
	return got
}
