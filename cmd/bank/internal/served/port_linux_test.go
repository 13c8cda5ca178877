package served

import (
	"net"
	"syscall"
	"testing"
)

// TestListenedBy: the grader can tell its own server's port from one
// another program holds, by the listening socket's owner.
func TestListenedBy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	if owned, known := ListenedBy(syscall.Getpgrp(), port); !known || !owned {
		t.Errorf("this process's own listener: owned %v, known %v", owned, known)
	}
	if owned, known := ListenedBy(1<<22, port); !known || owned {
		t.Errorf("a group that does not exist: owned %v, known %v", owned, known)
	}
	ln.Close()
	if _, known := ListenedBy(syscall.Getpgrp(), port); known {
		t.Errorf("a port nobody listens on is reported as known")
	}
}

// TestLocalPorts: a connection this process holds is among its group's
// ports, and not among a stranger group's.
func TestLocalPorts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mine := c.LocalAddr().(*net.TCPAddr).Port
	if ports, known := LocalPorts(syscall.Getpgrp()); !known || !ports[mine] {
		t.Errorf("this process's own connection from port %d: known %v, ports %v", mine, known, ports)
	}
	if ports, known := LocalPorts(1 << 22); !known || len(ports) != 0 {
		t.Errorf("a group that does not exist: known %v, ports %v", known, ports)
	}
}
