// Package httpserve is the lab's HTTP servers (bank serve, bank lab):
// the bounds on what a connection may make them hold, the headers that
// keep their pages out of other sites' frames, and their lifetime: serve
// until told to stop, then stop without waiting on connections that will
// never send a request.
package httpserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Bounds on a request's head, the same for bank serve and bank lab (bank
// help serve states them). Without them Go reads a head of up to 1 MiB:
// 300 connections each stalling in a 1 MiB header took bank serve from
// 26 MB to 513 MB.
const (
	// MaxHead is the most a request line and its headers may take;
	// beyond it the answer is 431 Request Header Fields Too Large and the
	// connection closes. A browser's head is under 2 KiB, a client's of
	// the API under 1 KiB.
	MaxHead = 16 << 10
	// HeadTimeout is how long a connection may take to send its whole
	// head, from its first byte (or from the end of its last request):
	// one that stalls, or trickles, is closed then.
	HeadTimeout = 5 * time.Second
	// IdleTimeout closes a kept-alive connection that sends nothing.
	IdleTimeout = 60 * time.Second
)

// New is a server for h with those bounds, whose every answer says that
// no other site may frame it (Frameless).
func New(h http.Handler) *http.Server {
	return &http.Server{
		Handler: Frameless(h),
		// net/http reads 4 KiB beyond MaxHeaderBytes (its buffer) before
		// it answers 431: so that the whole head is at most MaxHead.
		MaxHeaderBytes:    MaxHead - 4<<10,
		ReadHeaderTimeout: HeadTimeout,
		IdleTimeout:       IdleTimeout,
	}
}

// Frameless sets, on every answer of h, the two headers that forbid a
// page of another site to show it in a frame: Content-Security-Policy
// frame-ancestors 'none' (browsers of today) and X-Frame-Options: DENY
// (older ones). A framed page can be made to take clicks meant for the
// site around it, and a page of another origin that framed bank lab
// froze it. A handler that sets its own Content-Security-Policy must
// keep frame-ancestors 'none' in it.
func Frameless(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "frame-ancestors 'none'")
		w.Header().Set("X-Frame-Options", "DENY")
		h.ServeHTTP(w, r)
	})
}

// Run announces a server (a machine-readable "ready BASE" line on out
// for the lab that started this process, when ready, else banner for a
// person), serves hs on ln until ctx is done (Ctrl-C), then says so on
// errw, stops accepting and lets requests in flight finish, for ten
// seconds at most, closing at once the connections that never sent one.
func Run(ctx context.Context, hs *http.Server, ln net.Listener, ready bool, banner func(base string), out, errw io.Writer) error {
	base := "http://" + ln.Addr().String()
	if ready {
		fmt.Fprintln(out, "ready "+base)
	} else {
		banner(base)
	}
	unused := trackUnused(hs)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	fmt.Fprintln(errw, "bank: stopping: finishing requests in flight")
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- hs.Shutdown(shutdown) }()
	// Shutdown waits up to 5 s for a connection that never sent a request
	// (a browser opens spare ones ahead): close those as they are seen.
	for tick := time.NewTicker(20 * time.Millisecond); ; unused.close() {
		select {
		case err := <-stopped:
			tick.Stop()
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("shutting down: %w", err)
			}
			return nil
		case <-tick.C:
		}
	}
}

// unusedConns are a server's connections that have not sent a request yet.
type unusedConns struct {
	mu    sync.Mutex
	conns map[net.Conn]bool
}

func trackUnused(hs *http.Server) *unusedConns {
	u := &unusedConns{conns: map[net.Conn]bool{}}
	prev := hs.ConnState
	hs.ConnState = func(c net.Conn, st http.ConnState) {
		u.mu.Lock()
		if st == http.StateNew {
			u.conns[c] = true
		} else {
			delete(u.conns, c)
		}
		u.mu.Unlock()
		if prev != nil {
			prev(c, st)
		}
	}
	return u
}

func (u *unusedConns) close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for c := range u.conns {
		c.Close()
	}
}
