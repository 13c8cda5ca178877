package payoutgrade

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestDoorStampsFirstCall: a worker's very first call, made the moment
// its door opens, counts from the kernel's receive time (a call whose
// Sent is its At was not stamped).
func TestDoorStampsFirstCall(t *testing.T) {
	for i := range 20 {
		r := newRail(nil)
		url, err := r.open()
		if err != nil {
			t.Fatal(err)
		}
		c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
		if err == nil {
			_, err = c.Write([]byte("GET /payouts/ref-00001 HTTP/1.1\r\nHost: rail\r\n\r\n"))
		}
		if err == nil {
			var resp *http.Response
			if resp, err = http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				resp.Body.Close()
			}
		}
		if c != nil {
			c.Close()
		}
		r.close()
		if err != nil {
			t.Fatal(err)
		}
		r.mu.Lock()
		calls := append([]call(nil), r.calls...)
		r.mu.Unlock()
		if len(calls) != 1 {
			t.Fatalf("door %d: %d calls recorded, want 1", i+1, len(calls))
		}
		if got := calls[0]; !got.Sent.Before(got.At) {
			t.Fatalf("door %d: its first call was not stamped by the kernel (sent %s, read %s)", i+1, got.Sent.Format("15:04:05.000000"), got.At.Format("15:04:05.000000"))
		}
	}
}
