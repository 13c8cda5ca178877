package httpserve_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/httpserve"
)

// serve runs httpserve.New(h) on a loopback port, as bank serve and bank
// lab do, and returns its address.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := httpserve.New(h)
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

// head sends a request head whose one extra header holds pad bytes, and
// returns the status line of the answer.
func head(t *testing.T, addr string, pad int) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A bound against a hang, not a speed goal.
	c.SetDeadline(time.Now().Add(time.Minute))
	go io.WriteString(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: "+strings.Repeat("a", pad)+"\r\n\r\n")
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("a head of %d bytes: no answer: %v", pad, err)
	}
	return strings.TrimSpace(line)
}

func TestAnOversizedHeadIs431(t *testing.T) {
	t.Parallel()
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	if got := head(t, addr, httpserve.MaxHead-1<<10); !strings.Contains(got, " 200 ") {
		t.Errorf("a head under %d bytes: %q, want 200", httpserve.MaxHead, got)
	}
	for _, pad := range []int{httpserve.MaxHead, 1 << 20} {
		if got := head(t, addr, pad); !strings.Contains(got, " 431 ") {
			t.Errorf("a header of %d bytes: %q, want 431", pad, got)
		}
	}
}

// TestAStalledHeadIsCutOff: a connection that sends its head one byte at
// a time, never finishing it, is closed without an answer once
// HeadTimeout has passed since its first byte: a trickle does not extend
// it.
func TestAStalledHeadIsCutOff(t *testing.T) {
	t.Parallel()
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for tick := time.NewTicker(100 * time.Millisecond); ; {
			select {
			case <-stop:
				tick.Stop()
				return
			case <-tick.C:
				if _, err := c.Write([]byte("a")); err != nil {
					return
				}
			}
		}
	}()
	// A bound against a hang: a connection never cut off fails here.
	c.SetReadDeadline(time.Now().Add(time.Minute))
	got, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("a connection trickling its head was never cut off")
	}
	if len(got) != 0 {
		t.Fatalf("a stalled head got an answer: %q", got)
	}
}

// TestEveryAnswerForbidsFraming: whatever the handler answers (a page, an
// error, a header of its own), both framing headers are there.
func TestEveryAnswerForbidsFraming(t *testing.T) {
	t.Parallel()
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<p>hi</p>"))
		case "/error":
			http.Error(w, "no", http.StatusInternalServerError)
		default:
			http.NotFound(w, r)
		}
	}))
	for _, path := range []string{"/page", "/error", "/nowhere"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if csp, xfo := resp.Header.Get("Content-Security-Policy"), resp.Header.Get("X-Frame-Options"); csp != "frame-ancestors 'none'" || xfo != "DENY" {
			t.Errorf("%s: Content-Security-Policy %q, X-Frame-Options %q", path, csp, xfo)
		}
	}
}
