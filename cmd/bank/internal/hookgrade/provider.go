package hookgrade

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// The provider, as the grader plays it: it signs each delivery as
// Standard Webhooks 1.0 says (webhook-id, webhook-timestamp, and
// webhook-signature: v1, then the base64 HMAC-SHA256 of
// "id.timestamp.body" keyed by the secret's bytes), and gives up on a
// delivery after its timeout.

// providerTimeout is how long the provider waits for an answer (stretched
// on a busy machine), as the contract says.
const providerTimeout = 5 * time.Second

// event is one "payment received" the provider tells of.
type event struct {
	ID      string    // webhook-id: the same on every delivery of the event
	Payment string    // data.payment: the payment's reference
	Account int64     // data.account
	Kobo    int64     // data.amountKobo
	At      time.Time // its own timestamp, in the body
}

// body is the event as the provider sends it, byte for byte the same on
// every delivery.
func (e event) body() []byte {
	b, _ := json.Marshal(map[string]any{
		"type": "payment.received", "timestamp": e.At.UTC().Format(time.RFC3339),
		"data": map[string]any{"payment": e.Payment, "account": e.Account, "amountKobo": e.Kobo},
	})
	return b
}

// newSecret is an endpoint's signing secret: whsec_ and the base64 of its
// key, and the key.
func newSecret() (string, []byte) {
	key := make([]byte, 24)
	rand.Read(key)
	return "whsec_" + base64.StdEncoding.EncodeToString(key), key
}

// sign is the webhook-signature value for one delivery.
func sign(key []byte, id string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.", id, ts)
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// delivery is one POST of an event to the consumer, and what came of it.
type delivery struct {
	Event    event
	SignedAt time.Time // its webhook-timestamp
	Forged   bool      // signed with a key that is not the endpoint's
	Sent     time.Time
	Answered time.Time // when the answer came (zero: none)
	Ended    time.Time // when the answer came, or the provider gave up
	Status   int       // 0: no answer (the connection failed, or the provider's timeout passed)
	Body     string    // the answer's first bytes
	Err      string    // why there was no answer
}

// ok reports whether the consumer took it: a 2xx.
func (d delivery) ok() bool { return d.Status/100 == 2 }

// String says the delivery and its answer in a few words.
func (d delivery) String() string {
	what := fmt.Sprintf("%s (%s)", d.Event.ID, d.Event.Payment)
	switch {
	case d.Status != 0:
		return fmt.Sprintf("%s answered %d", what, d.Status)
	case d.Err != "":
		return fmt.Sprintf("%s: no answer (%s)", what, d.Err)
	}
	return what + ": no answer yet"
}

// provider delivers to one consumer.
type provider struct {
	url string // the consumer's POST /webhooks
	key []byte
}

// deliver posts e, signed at signedAt (now, when zero), and waits for the
// answer until timeout.
func (p *provider) deliver(ctx context.Context, e event, signedAt time.Time, forged bool, timeout time.Duration) delivery {
	if signedAt.IsZero() {
		signedAt = time.Now()
	}
	d := delivery{Event: e, SignedAt: signedAt, Forged: forged}
	key := p.key
	if forged {
		key = []byte("a key that is not the endpoint's")
	}
	body := e.body()
	ts := signedAt.Unix()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		d.Err = err.Error()
		return d
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", e.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sign(key, e.ID, ts, body))
	d.Sent = time.Now()
	resp, err := (&http.Client{Timeout: timeout}).Do(req)
	if err != nil {
		d.Err, d.Ended = noAnswer(err), time.Now()
		return d
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	d.Answered, d.Status, d.Body = time.Now(), resp.StatusCode, string(b)
	d.Ended = d.Answered
	return d
}

// noAnswer names why no answer came, in words that do not change from
// run to run.
func noAnswer(err error) string {
	if e, ok := err.(interface{ Timeout() bool }); ok && e.Timeout() {
		return "the provider's timeout passed"
	}
	return "the connection failed"
}
