// Package httpserve is the lifetime of the lab's HTTP servers (bank
// serve, bank lab): serve until told to stop, then stop without waiting
// on connections that will never send a request.
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
