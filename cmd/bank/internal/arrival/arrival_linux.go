package arrival

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Listener is ln, each TCP connection it accepts reading with the
// kernel's receive time of its data (SO_TIMESTAMPNS): a connection where
// that cannot be set is passed on as it is.
func Listener(ln net.Listener) net.Listener {
	// Set on the listening socket too, so that the kernel stamps a
	// request that comes before its connection is accepted.
	if tl, ok := ln.(*net.TCPListener); ok {
		if raw, err := tl.SyscallConn(); err == nil {
			raw.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) })
		}
	}
	return listener{ln}
}

type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c, nil
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) }); err != nil || serr != nil {
		return c, nil
	}
	return &conn{Conn: tc, tcp: tc, raw: raw}, nil
}

// conn reads with recvmsg, keeping the kernel's time of the data it read
// last. It embeds net.Conn, not *net.TCPConn, so that no fast path of the
// latter's (WriteTo) reads around it.
type conn struct {
	net.Conn
	tcp  *net.TCPConn
	raw  syscall.RawConn
	last atomic.Int64 // unix nanoseconds
}

// CloseWrite is the TCP connection's, for the HTTP server's graceful close.
func (c *conn) CloseWrite() error { return c.tcp.CloseWrite() }

func (c *conn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var oob [64]byte
	var n, oobn int
	var err error
	if rerr := c.raw.Read(func(fd uintptr) bool {
		for {
			n, oobn, _, _, err = unix.Recvmsg(int(fd), b, oob[:], 0)
			if err != unix.EINTR {
				return err != unix.EAGAIN
			}
		}
	}); rerr != nil {
		return 0, rerr // closed, or past its deadline
	}
	if err != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("recvmsg", err)}
	}
	if n == 0 {
		return 0, io.EOF
	}
	// No stamp (none came with the data): unknown, not the last one's.
	c.last.Store(0)
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range msgs {
			// A struct timespec: two 64-bit words on the 64-bit Linux the
			// lab is built for.
			if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
				sec, nsec := int64(binary.NativeEndian.Uint64(m.Data)), int64(binary.NativeEndian.Uint64(m.Data[8:]))
				c.last.Store(time.Unix(sec, nsec).UnixNano())
			}
		}
	}
	return n, nil
}
