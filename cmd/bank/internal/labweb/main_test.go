package labweb_test

import (
	"testing"

	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

func TestMain(m *testing.M) { pgtest.Caches(m) }
