package pgserver

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"
)

// probeWait is how long Probe waits for an answer to PostgreSQL's first
// message, and then as long again for one to a blank line. PostgreSQL
// answers the first at once (one byte), busy or not: the driver's own
// connect_timeout (10 s) is for a server far away, not for a port that
// will never answer as PostgreSQL does.
const probeWait = 2 * time.Second

// sslRequest is the first message a client may send: it asks for TLS.
// PostgreSQL (and a pooler in front of one) answers it with one byte, S
// or N, before anything else.
var sslRequest = []byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f}

// Probe looks at what listens where a --database-url points before the
// driver connects, so that a URL naming something other than PostgreSQL
// fails within seconds, in one line that says what answered there (the
// driver waits out its connect_timeout on a server that waits for a
// request line, as an HTTP server does, and then can only say that
// nothing answered). It sends PostgreSQL's request for TLS; an answer of
// S or N, alone, is PostgreSQL, and Probe returns nil. Nothing after probeWait:
// it sends a blank line, which an HTTP server answers with its status
// line. Any other answer, or none, is an *Error naming it. A URL it cannot
// read, with several hosts, or whose address refuses or cannot be found,
// is left to the driver and its own messages (nil).
func Probe(ctx context.Context, connString string) error {
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		return nil
	}
	for _, f := range cfg.Fallbacks { // sslmode=prefer is a fallback on the same address
		if f.Host != cfg.Host || f.Port != cfg.Port {
			return nil
		}
	}
	network, addr := "tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	if strings.HasPrefix(cfg.Host, "/") {
		network, addr = "unix", filepath.Join(cfg.Host, fmt.Sprintf(".s.PGSQL.%d", cfg.Port))
	}
	wait := probeWait
	if cfg.ConnectTimeout > 0 {
		wait = min(wait, cfg.ConnectTimeout)
	}
	d := net.Dialer{Timeout: 2 * wait}
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil // refused, no such host, unreachable: the driver says which
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	where := fmt.Sprintf("cannot reach PostgreSQL at %s:%d", cfg.Host, cfg.Port)
	if _, err := conn.Write(sslRequest); err != nil {
		return nil
	}
	answer, nudged := read(conn, wait), false
	if len(answer) == 0 && ctx.Err() == nil {
		conn.Write([]byte("\r\n\r\n"))
		answer, nudged = read(conn, wait), true
	}
	pg := len(answer) > 0 && (answer[0] == 'S' || answer[0] == 'N')
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("connecting to PostgreSQL: %w", ctx.Err()) // Ctrl-C, not the server
	case pg && len(answer) == 1:
		return nil // and then it waits: for a TLS handshake, or the start-up
	case pg && nudged:
		return nil // a slow one, which may have said more about the blank line: the driver will tell
	case len(answer) == 0:
		return &Error{fmt.Errorf("%s: something accepts connections there but answered nothing in %v, neither PostgreSQL's first message nor a blank line; is it the right host and port?", where, 2*wait)}
	}
	return &Error{fmt.Errorf("%s: %s answers there, not PostgreSQL; is it the right port?", where, what(answer))}
}

// read is what conn sends within wait (up to 512 bytes): the first
// bytes, and what follows them closely.
func read(conn net.Conn, wait time.Duration) []byte {
	buf := make([]byte, 512)
	conn.SetReadDeadline(time.Now().Add(wait))
	n, _ := conn.Read(buf)
	if n > 0 && n < len(buf) {
		conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		m, _ := conn.Read(buf[n:])
		n += m
	}
	return buf[:n]
}

// what names what answered, from its first line.
func what(answer []byte) string {
	line, _, _ := bytes.Cut(answer, []byte("\n"))
	line = bytes.TrimRight(line, "\r")
	printable := len(line) > 0 && bytes.IndexFunc(line, func(r rune) bool { return !unicode.IsPrint(r) }) < 0
	if len(line) > 60 {
		line = append(line[:60:60], "…"...)
	}
	page := bytes.ToLower(answer[:min(len(answer), 64)])
	switch {
	case bytes.HasPrefix(answer, []byte("HTTP/")):
		return fmt.Sprintf("an HTTP server (%q)", line)
	case bytes.HasPrefix(page, []byte("<!doctype html")) || bytes.HasPrefix(page, []byte("<html")):
		return "a web server (it sent an HTML page)"
	case printable:
		return fmt.Sprintf("a server that says %q", line)
	}
	return fmt.Sprintf("a server that sends %d bytes of its own protocol", len(answer))
}
