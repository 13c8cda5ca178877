package pgserver_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/zudojs/bank/scenarios/lab/pgserver"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// TestProbeNamesWhatAnswers: a --database-url whose port is not a
// PostgreSQL's fails in one line (an *Error) that says what answers
// there, within seconds: an HTTP server that waits for a request line
// (before, 10 s of silence, then "no answer"), one that answers with a
// page, a server that greets first, one that never answers; the tests'
// own PostgreSQL passes, and so does a URL that refuses (the driver says
// so in its own words).
func TestProbeNamesWhatAnswers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name string
		// serve answers one connection: what it read so far is given.
		serve func(conn net.Conn)
		says  string
	}{
		{"http", func(conn net.Conn) { // as Go's and nginx's do, once a line has ended
			waitForLine(conn)
			conn.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"))
		}, `an HTTP server ("HTTP/1.1 400 Bad Request") answers there, not PostgreSQL`},
		{"html", func(conn net.Conn) { // as python's http.server does, to a request it cannot read
			waitForLine(conn)
			conn.Write([]byte("<!DOCTYPE HTML>\n<html><body>Bad request</body></html>\n"))
		}, "a web server (it sent an HTML page) answers there"},
		{"greeting", func(conn net.Conn) {
			conn.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n"))
		}, `a server that says "SSH-2.0-OpenSSH_9.6" answers there`},
		{"silent", func(net.Conn) {}, "answered nothing in 4s"},
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
					c.serve(conn)
				}
			}()
			err = pgserver.Probe(ctx, "postgres://lab:secret@"+ln.Addr().String()+"/bank")
			var e *pgserver.Error
			if !errors.As(err, &e) || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "secret") {
				t.Fatalf("%v, want one line (an *Error) that says %q", err, c.says)
			}
		})
	}
	urls := []string{pgtest.AdminURL(), "postgres://lab@127.0.0.1:1/bank"}
	if s := pgtest.Server(); s != nil {
		urls = append(urls, s.URL("postgres"), s.TCPURL("postgres"))
	}
	for _, u := range urls {
		if u == "" {
			continue
		}
		if err := pgserver.Probe(ctx, u); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
}

// waitForLine reads until a line has ended, as an HTTP server reads a
// request line (PostgreSQL's first message has no newline).
func waitForLine(conn net.Conn) {
	buf := make([]byte, 64)
	for {
		n, err := conn.Read(buf)
		if err != nil || strings.Contains(string(buf[:n]), "\n") {
			return
		}
	}
}
