//go:build !linux

package served

// ListenedBy cannot tell who listens on a port here.
func ListenedBy(pgid, port int) (owned, known bool) { return false, false }
