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
