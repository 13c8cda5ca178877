package practice

import (
	"os"
	"testing"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/scenarios/lab/pgserver"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

func TestMain(m *testing.M) {
	os.Exit(pgtest.Run(m, pgserver.Template{Prefix: "bank", Schema: api.SchemaText(), Setup: api.Setup}))
}
