package labweb_test

import (
	"testing"

	"github.com/zudojs/bank/bank/pgserver/pgtest"
)

func TestMain(m *testing.M) { pgtest.Caches(m) }
