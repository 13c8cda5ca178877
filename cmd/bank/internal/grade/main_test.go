package grade

import (
	"fmt"
	"os"
	"testing"

	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// TestMain gives the tests a PostgreSQL whose databases are the checks'.
func TestMain(m *testing.M) {
	if err := pgtest.Inputs("testdata"); err != nil { // built and run by the tests: see pgtest.Inputs
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := pgtest.Run(m, Template())
	removeBin()
	os.Exit(code)
}
