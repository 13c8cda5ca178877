package procs

import (
	"fmt"
	"net"
)

// FreePort is a TCP port on the loopback interface that nothing listens
// on right now, for a child to be told to listen on. Another program may
// take it before the child does: a caller that must have it tries again
// with another.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
