package clientgrade

import (
	"bufio"
	"net"
	"net/http"
	"testing"
)

// TestFrontStampsFirstRequest: a client's very first request, sent the
// moment the front is up, counts from the kernel's receive time, not from
// when the front read it (an attempt whose Sent is its At was not
// stamped: arrival.Of had no time for it).
func TestFrontStampsFirstRequest(t *testing.T) {
	for i := range 20 {
		f, err := newFront(nil, func(int, *attempt) fault {
			return fault{kind: answer, status: http.StatusServiceUnavailable, body: `{"title":"busy"}`}
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := postAtOnce(f.ln.Addr().String()); err != nil {
			f.close()
			t.Fatal(err)
		}
		posts := f.posts()
		f.close()
		if len(posts) != 1 {
			t.Fatalf("front %d: %d POSTs recorded, want 1", i+1, len(posts))
		}
		if a := posts[0]; !a.Sent.Before(a.At) {
			t.Fatalf("front %d: its first request was not stamped by the kernel (sent %s, read %s)", i+1, a.Sent.Format("15:04:05.000000"), a.At.Format("15:04:05.000000"))
		}
	}
}

// postAtOnce sends a POST /transfers on a connection of its own as soon
// as it is connected, and reads the answer.
func postAtOnce(addr string) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Write([]byte("POST /transfers HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
