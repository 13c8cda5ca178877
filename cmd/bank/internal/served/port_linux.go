package served

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ListenedBy tells whether a process of group pgid is the one listening
// on port (known is false when it cannot tell). A port the grader chose
// as free can be taken by another program before the server binds it;
// then a connection to it reaches a stranger, and the server under test,
// unable to bind, exits.
func ListenedBy(pgid, port int) (owned, known bool) {
	listening := map[string]bool{}
	for inode, s := range tcpSockets() {
		if s.listen && s.port == port {
			listening[inode] = true
		}
	}
	if len(listening) == 0 {
		return false, false
	}
	for inode := range groupSockets(pgid) {
		if listening[inode] {
			return true, true
		}
	}
	return false, true
}

// LocalPorts is the local ports of the TCP sockets the processes of group
// pgid hold (known is false when it cannot tell): the client_port of a
// database session of theirs is one of them.
func LocalPorts(pgid int) (ports map[int]bool, known bool) {
	all := tcpSockets()
	if all == nil {
		return nil, false
	}
	ports = map[int]bool{}
	for inode := range groupSockets(pgid) {
		if s, ok := all[inode]; ok {
			ports[s.port] = true
		}
	}
	return ports, true
}

type tcpSocket struct {
	port   int // local
	listen bool
}

// tcpSockets is the machine's TCP sockets by inode (/proc/net/tcp and
// tcp6), nil when they cannot be read.
func tcpSockets() map[string]tcpSocket {
	var out map[string]tcpSocket
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		if out == nil {
			out = map[string]tcpSocket{}
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 {
				continue
			}
			local := fields[1]
			p, err := strconv.ParseInt(local[strings.LastIndexByte(local, ':')+1:], 16, 32)
			if err != nil {
				continue
			}
			out[fields[9]] = tcpSocket{port: int(p), listen: fields[3] == "0A"} // 0A: LISTEN
		}
		f.Close()
	}
	return out
}

// groupSockets is the inodes of the sockets the processes of group pgid
// hold open.
func groupSockets(pgid int) map[string]bool {
	inodes := map[string]bool{}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		stat, err := os.ReadFile(p + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 3 || fields[2] != strconv.Itoa(pgid) { // state, ppid, pgrp
			continue
		}
		fds, _ := os.ReadDir(p + "/fd")
		for _, fd := range fds {
			if link, err := os.Readlink(p + "/fd/" + fd.Name()); err == nil && strings.HasPrefix(link, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
			}
		}
	}
	return inodes
}
