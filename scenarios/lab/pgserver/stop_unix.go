//go:build unix

package pgserver

// signalPostmaster signals bank's own child (never a pid read from a file).
func signalPostmaster(s *Server, how shutdown) error {
	if how == immediate {
		return s.pm.Quit()
	}
	return s.pm.Interrupt()
}
