package pgserver

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// TestWrongAddressFailsInOneLine: a --database-url whose port is not a
// PostgreSQL's ends in one line that says so, an *Error (exit 3): a port
// that accepts and never answers, within connectLimit (before it, Open
// waited for ever), and a port that answers something else (an HTTP
// server), with what the driver said made plain.
func TestWrongAddressFailsInOneLine(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		answer string // written to each connection; "" never answers
		says   string
	}{
		{"silent", "", "no answer within 10s (connect_timeout)"},
		{"http", "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", "does not speak PostgreSQL's protocol"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				for {
					conn, err := ln.Accept()
					if err != nil {
						return
					}
					defer conn.Close()
					conn.Write([]byte(c.answer))
				}
			}()
			// A bound against a hang, not a speed goal.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err = Open(ctx, "postgres://lab:secret@"+ln.Addr().String()+"/bank", Template{Prefix: "wrong"})
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "secret") {
				t.Fatalf("%v, want one line (an *Error) that says %q", err, c.says)
			}
		})
	}
}
