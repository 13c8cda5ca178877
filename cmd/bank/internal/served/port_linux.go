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
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			local := fields[1]
			hexPort := local[strings.LastIndexByte(local, ':')+1:]
			if p, err := strconv.ParseInt(hexPort, 16, 32); err == nil && int(p) == port {
				inodes[fields[9]] = true
			}
		}
		f.Close()
	}
	if len(inodes) == 0 {
		return false, false
	}
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
			link, err := os.Readlink(p + "/fd/" + fd.Name())
			if err == nil && strings.HasPrefix(link, "socket:[") && inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
				return true, true
			}
		}
	}
	return false, true
}
