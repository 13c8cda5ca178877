package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The wording the harness shares with the lessons: how a reply and a
// duration read, in the transcript and in the pictures alike.

// TransferLabel is "transfer N" for a receipt, or the error code.
func TransferLabel(body []byte) string {
	var r struct {
		TransferID int64 `json:"transferId"`
	}
	if json.Unmarshal(body, &r) == nil && r.TransferID != 0 {
		return fmt.Sprintf("transfer %d", r.TransferID)
	}
	return ErrorOrOK(body)
}

// ErrorOrOK is the body's error code, or "ok" for a success.
func ErrorOrOK(body []byte) string {
	var p struct{ Error string }
	if json.Unmarshal(body, &p) == nil && p.Error != "" {
		return p.Error
	}
	return "ok"
}

// Human is a simulated duration as a transcript says it: "31 s", "24 h",
// "25 h 30 s".
func Human(d time.Duration) string {
	if d >= time.Hour {
		h := d.Truncate(time.Hour)
		if rest := d - h; rest >= time.Second {
			return fmt.Sprintf("%d h %s", int(h.Hours()), Human(rest))
		}
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
	return fmt.Sprintf("%d s", int(d.Seconds()))
}

// ErrLostResponse is what the phone sees when the server's answer is lost.
var ErrLostResponse = errors.New("timed out waiting for the response")

// KeyName is an idempotency key as a line or an arrow names it: a key the
// story chose (double-tap-0000000001) whole, so that two keys never look
// alike; a random one (a UUID, as an app makes) by its first 8
// characters, as a commit is named by the start of its hash.
func KeyName(key string) string {
	if len(key) == 36 && strings.Count(key, "-") == 4 {
		return key[:8] + "…"
	}
	return key
}
