package lab

import (
	"context"

	"github.com/zudojs/bank/scenarios/lab/procs"
)

// StartServe starts `bank serve` (binary) on a free loopback port,
// serving the database at dbURL in place: a procs.Spec, started with
// StartReady, so that it dies with the lab. The database URL goes in the
// child's environment (DATABASE_URL), never on its command line, where
// every local user could read it. Later args win over the first ones (a
// restart passes --addr to keep its port). The stories, bank bench and
// bank torture start their servers through it: the one place that knows
// bank serve's flags.
func StartServe(ctx context.Context, binary, dbURL string, args ...string) (*procs.Child, error) {
	spec := procs.Spec{Path: binary, Args: append([]string{"serve", "--in-place", "--addr", "127.0.0.1:0"}, args...), Env: []string{"DATABASE_URL=" + dbURL}}
	return spec.StartReady(ctx)
}
