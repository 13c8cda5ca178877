//go:build !linux

package served

// ListenedBy cannot tell who listens on a port here.
func ListenedBy(pgid, port int) (owned, known bool) { return false, false }

// LocalPorts cannot tell a process's sockets here.
func LocalPorts(pgid int) (ports map[int]bool, known bool) { return nil, false }
