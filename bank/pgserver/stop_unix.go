//go:build unix

package pgserver

import "github.com/zudojs/bank/bank/procs"

// signalPostmaster signals bank's own child (never a pid read from a file).
func signalPostmaster(s *Server, how shutdown) error {
	if how == immediate {
		return procs.Quit(s.pm.cmd.Process)
	}
	return procs.InterruptProcess(s.pm.cmd.Process)
}
