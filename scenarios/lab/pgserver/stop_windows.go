package pgserver

import (
	"context"

	"github.com/zudojs/bank/scenarios/lab/procs"
)

// signalPostmaster asks pg_ctl to deliver the request: PostgreSQL on
// Windows takes its shutdown signals through pg_ctl.
func signalPostmaster(s *Server, how shutdown) error {
	mode := "fast"
	if how == immediate {
		mode = "immediate"
	}
	pgCtl := procs.Spec{Path: s.Binaries.bin("pg_ctl"), Args: []string{"stop", "-m", mode, "-D", s.slot.data}}
	if pgCtl.Run(context.Background()) != nil {
		return s.pm.Quit() // which, on Windows, ends it
	}
	return nil
}
