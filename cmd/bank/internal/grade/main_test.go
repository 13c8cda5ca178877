package grade

import (
	"testing"

	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// TestMain gives the tests a PostgreSQL whose databases are the checks'.
func TestMain(m *testing.M) { pgtest.Main(m, Template()) }
