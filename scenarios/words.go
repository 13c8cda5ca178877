package scenarios

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The wording that several lessons share: how a reply, a replay, a retry,
// a duration or a list reads in a transcript. One place, so that the same
// thing is always said the same way.

// transferLabel is "transfer N" for a receipt, or the error code.
func transferLabel(body []byte) string {
	var r struct {
		TransferID int64 `json:"transferId"`
	}
	if json.Unmarshal(body, &r) == nil && r.TransferID != 0 {
		return fmt.Sprintf("transfer %d", r.TransferID)
	}
	return errorOrOK(body)
}

// errorOrOK is the body's error code, or "ok" for a success.
func errorOrOK(body []byte) string {
	var p struct{ Error string }
	if json.Unmarshal(body, &p) == nil && p.Error != "" {
		return p.Error
	}
	return "ok"
}

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

func willRetry(retry bool) string {
	if retry {
		return ", will retry"
	}
	return ", giving up"
}

func human(d time.Duration) string {
	if d >= time.Hour {
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
	return fmt.Sprintf("%d s", int(d.Seconds()))
}

func list(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// errLostResponse is what the phone sees when the server's answer is lost.
var errLostResponse = errors.New("timed out waiting for the response")

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

// nodeList writes names the way Node prints an array of strings.
func nodeList(items []string) string {
	if len(items) == 0 {
		return "[]"
	}
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = "'" + s + "'"
	}
	return "[ " + strings.Join(quoted, ", ") + " ]"
}
