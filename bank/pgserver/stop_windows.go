package pgserver

import "os/exec"

// signalPostmaster asks pg_ctl to deliver the request: PostgreSQL on
// Windows takes its shutdown signals through pg_ctl.
func signalPostmaster(s *Server, how shutdown) error {
	mode := "fast"
	if how == immediate {
		mode = "immediate"
	}
	if exec.Command(s.Binaries.bin("pg_ctl"), "stop", "-m", mode, "-D", s.slot.data).Run() != nil {
		return s.pm.cmd.Process.Kill()
	}
	return nil
}
