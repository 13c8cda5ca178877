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
		if _, err := stamp(tl); err == nil {
			kernelStamps()
		}
	}
	return listener{ln}
}

// stamp asks the kernel for the receive time of what c reads, and
// returns c's raw connection, to read it by.
func stamp(c interface {
	SyscallConn() (syscall.RawConn, error)
}) (syscall.RawConn, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) }); err != nil {
		return nil, err
	}
	return raw, serr
}

// kernelStamps returns once the kernel stamps what it receives, or after
// a second. The first socket on a machine to ask for stamps turns them on
// for all, but a moment later, in a work item of the kernel's own
// (netstamp_clear, net/core/dev.c): data received before then has no time.
// Not seen here (this machine's kernel had them on already, or on at
// once), but nothing says a learner's will: a byte sent over a loopback
// connection of its own and read back with its time is the witness.
// A kernel that never stamped within the second (a sandbox's) is not
// waited for again.
func kernelStamps() {
	if unstamped.Load() {
		return
	}
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return
	}
	if _, err := stamp(ln); err != nil {
		ln.Close()
		return
	}
	defer ln.Close()
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if stamped(ln) {
			return
		}
	}
	unstamped.Store(true)
}

var unstamped atomic.Bool

// stamped: a byte sent to ln came with the kernel's time.
func stamped(ln *net.TCPListener) bool {
	out, err := net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		return false
	}
	defer out.Close()
	if _, err := out.Write([]byte{0}); err != nil {
		return false
	}
	ln.SetDeadline(time.Now().Add(time.Second))
	in, err := ln.AcceptTCP()
	if err != nil {
		return false
	}
	defer in.Close()
	raw, err := stamp(in)
	if err != nil {
		return false
	}
	c := &conn{Conn: in, tcp: in, raw: raw}
	in.SetReadDeadline(time.Now().Add(time.Second))
	n, err := c.Read(make([]byte, 1))
	return n == 1 && err == nil && c.last.Load() != 0
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
	raw, err := stamp(tc)
	if err != nil {
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
