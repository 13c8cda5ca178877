package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// outcome is what one rail request told the worker about a reference.
type outcome int

const (
	unknown  outcome = iota // 409, 5xx, no answer, anything unexpected: it may have been paid
	paid                    // POST 201, or GET 200 with status "paid"
	notFound                // GET 404: never received, safe to send
	refused                 // POST 422: the body is wrong
	conflict                // GET 200 paid, but for another account or amount
)

type answer struct {
	outcome outcome
	code    int    // HTTP status, 0 when there was no answer
	detail  string // for the log
}

type railClient struct {
	base string
	http *http.Client
	log  *log.Logger
}

func newRailClient(base string, timeout time.Duration, lg *log.Logger) *railClient {
	return &railClient{
		base: strings.TrimRight(base, "/"),
		http: &http.Client{Timeout: timeout},
		log:  lg,
	}
}

// post sends POST /payouts for the row under row.Reference.
func (c *railClient) post(row *outboxRow) answer {
	body, _ := json.Marshal(struct {
		Reference  string `json:"reference"`
		Account    int64  `json:"account"`
		AmountKobo int64  `json:"amountKobo"`
	}{row.Reference, row.AccountID, row.AmountKobo})

	a := answer{outcome: unknown}
	req, err := http.NewRequest(http.MethodPost, c.base+"/payouts", bytes.NewReader(body))
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
		var resp *http.Response
		resp, err = c.http.Do(req)
		if err == nil {
			data := readBody(resp)
			a.code = resp.StatusCode
			a.detail = fmt.Sprintf("%d %s", resp.StatusCode, data)
			switch resp.StatusCode {
			case http.StatusCreated: // paid now (even if the body was cut short)
				a.outcome = paid
			case http.StatusUnprocessableEntity:
				a.outcome = refused
			case http.StatusConflict:
				a.detail += ": received before; ask before sending again"
			default:
				a.detail += ": outcome unknown; ask before sending again"
			}
		}
	}
	if err != nil {
		a.detail = "no answer (" + shortErr(err) + "): outcome unknown; ask before sending again"
	}
	c.log.Printf("row=%d ref=%s POST /payouts -> %s", row.ID, row.Reference, a.detail)
	return a
}

// status asks GET /payouts/REFERENCE about row.Reference.
func (c *railClient) status(row *outboxRow) answer {
	a := answer{outcome: unknown}
	resp, err := c.http.Get(c.base + "/payouts/" + url.PathEscape(row.Reference))
	if err == nil {
		data := readBody(resp)
		a.code = resp.StatusCode
		a.detail = fmt.Sprintf("%d %s", resp.StatusCode, data)
		switch resp.StatusCode {
		case http.StatusOK:
			switch st, ok := parseStatus(data); {
			case !ok || st.status != "paid":
				a.detail += ": not a paid answer; still unknown"
			case st.reference != "" && st.reference != row.Reference,
				st.account != nil && *st.account != row.AccountID,
				st.amountKobo != nil && *st.amountKobo != row.AmountKobo:
				a.outcome = conflict
				a.detail += fmt.Sprintf(": paid, but the row is account %d amountKobo %d", row.AccountID, row.AmountKobo)
			default:
				a.outcome = paid
			}
		case http.StatusNotFound:
			a.outcome = notFound
			a.detail += ": never received; safe to send"
		default:
			a.detail += ": still unknown; ask again later"
		}
	}
	if err != nil {
		a.detail = "no answer (" + shortErr(err) + "): still unknown; ask again later"
	}
	c.log.Printf("row=%d ref=%s GET /payouts/%s -> %s", row.ID, row.Reference, row.Reference, a.detail)
	return a
}

type railStatus struct {
	reference, status   string
	account, amountKobo *int64 // nil when absent or not a whole number
}

// parseStatus reads a GET 200 body leniently: only "status" must be there;
// the other fields are compared when present in the contract's form.
func parseStatus(data []byte) (railStatus, bool) {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if dec.Decode(&m) != nil {
		return railStatus{}, false
	}
	var st railStatus
	st.status, _ = m["status"].(string)
	st.reference, _ = m["reference"].(string)
	number := func(v any) *int64 {
		if n, ok := v.(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				return &i
			}
		}
		return nil
	}
	st.account, st.amountKobo = number(m["account"]), number(m["amountKobo"])
	return st, true
}

func readBody(resp *http.Response) []byte {
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	data = bytes.TrimSpace(data)
	if len(data) > 200 {
		data = append(data[:200:200], "..."...)
	}
	return data
}

func shortErr(err error) string {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}
