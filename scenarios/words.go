package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/zudojs/bank/bank/client"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
)

// The wording that several lessons share: how a reply, a replay, a retry,
// a duration or a list reads in a transcript. One place, so that the same
// thing is always said the same way.

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
)

// answer is what the app received, as a response.
func answer(res client.Result) idem.Response {
	return idem.Response{Status: res.Status, Replayed: res.Replayed, Body: res.Body}
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
