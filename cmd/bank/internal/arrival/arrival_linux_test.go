package arrival

import (
	"bufio"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestOf: a request counts from when its client sent it, not from when a
// server held up elsewhere read it; each request on a connection from its
// own sending.
func TestOf(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	type seen struct{ arrived, handled time.Time }
	got := make(chan seen, 2)
	// The server is kept from reading a new connection until the first
	// request has been written, and for held after: the hold is timed from
	// the client's own writing, so a busy machine cannot shorten it.
	written := make(chan struct{})
	const held = 300 * time.Millisecond
	s := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			at, ok := Of(r)
			if !ok {
				t.Error("no arrival time")
			}
			got <- seen{at, time.Now()}
		}),
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				select {
				case <-written:
				case <-time.After(10 * time.Second):
				}
				time.Sleep(held)
			}
		},
	}
	Start(s, ln)
	defer s.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rd := bufio.NewReader(c)
	for i := range 2 {
		sent := time.Now()
		if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		wrote := time.Now()
		if i == 0 {
			close(written)
		}
		resp, err := http.ReadResponse(rd, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		s := <-got
		// On loopback the kernel stamps the data as the write hands it
		// over: between the two readings around the write (give or take
		// a busy machine's moment after it).
		if s.arrived.Before(sent) || s.arrived.Sub(wrote) > 100*time.Millisecond {
			t.Errorf("request %d: arrived %s after the write began, which took %s", i+1, s.arrived.Sub(sent), wrote.Sub(sent))
		}
		// The server read the first request at least held after it was
		// written: its arrival must be that much older than its handling
		// (a time taken when the request was read would be a moment old).
		if i == 0 && s.handled.Sub(s.arrived) < held-100*time.Millisecond {
			t.Errorf("the first request was handled %s after its arrival, though the server was held %s after it was written", s.handled.Sub(s.arrived), held)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOfUnstamped: a request from a server not wrapped has no time.
func TestOfUnstamped(t *testing.T) {
	r, _ := http.NewRequest("GET", "http://x/", nil)
	if _, ok := Of(r); ok {
		t.Error("a time for a request with no stamped connection")
	}
}

// TestKernelStamps: the witness that the kernel stamps sees its byte
// stamped (a broken one would wait its second and give up on stamps).
func TestKernelStamps(t *testing.T) {
	kernelStamps()
	if unstamped.Load() {
		t.Error("no byte came back stamped within a second")
	}
}
