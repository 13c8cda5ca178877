// Package arrival tells when the kernel received a request: the instant
// a client sent it, to within microseconds on loopback, however long a
// busy machine kept the server from reading it. The graders time what a
// learner's program does (how long it waited between tries) by it, so
// that their own delays do not count as the program's.
package arrival

import (
	"context"
	"net"
	"net/http"
	"time"
)

// connKey is where a request's context holds its connection.
type connKey struct{}

// ConnContext is for http.Server's ConnContext: it keeps each request's
// connection where Of finds it.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// Of is when the kernel received the last of r's bytes read so far (its
// head, when the handler has not read its body); ok is false where that
// is not known: a listener not wrapped by Listen, or not Linux.
func Of(r *http.Request) (at time.Time, ok bool) {
	c, isStamped := r.Context().Value(connKey{}).(*conn)
	if !isStamped {
		return time.Time{}, false
	}
	ns := c.last.Load()
	return time.Unix(0, ns), ns != 0
}

// Start has s serve ln in the background, its requests' arrivals known
// to Of (on Linux): from when Start returns, so that a client started
// after it has even its first request stamped.
func Start(s *http.Server, ln net.Listener) {
	s.ConnContext = ConnContext
	go s.Serve(Listener(ln))
}
