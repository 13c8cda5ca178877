package grade

import (
	"os"
	"testing"

	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// TestMain gives the tests a PostgreSQL whose databases are the checks'.
func TestMain(m *testing.M) {
	code := pgtest.Run(m, Template())
	removeBin()
	os.Exit(code)
}
