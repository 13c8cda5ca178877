package grade

import (
	"testing"

	"github.com/zudojs/bank/bank/pgserver/pgtest"
)

// TestMain gives the tests a PostgreSQL whose databases are the checks'.
func TestMain(m *testing.M) { pgtest.Main(m, Template()) }
