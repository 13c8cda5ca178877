package lab_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/pgserver"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
	"github.com/zudojs/bank/scenarios/lab/render"
)

// A scenario that claims to show a break which does not happen is not
// reproduced, and its verdict names the check.
func TestVerdictWhenTheLessonDoesNotReproduce(t *testing.T) {
	sc := &lab.Scenario{
		Name:        "claims-a-break",
		Summary:     "a correct transfer that claims money vanishes",
		ShowsBroken: []lab.Check{lab.TotalKept},
		Run: func(ctx context.Context, lab *lab.Lab) error {
			lab.Intent("one tap", 1, 2, 1_000_000, 1)
			return pgx.BeginFunc(ctx, lab.DB, func(tx pgx.Tx) error {
				_, err := bank.Transfer(ctx, tx, 1, bank.Request{From: 1, To: 2, AmountKobo: 1_000_000})
				return err
			})
		},
	}
	var out bytes.Buffer
	v, err := lab.Run(context.Background(), pgtest.Clones(), sc, lab.Options{Sink: render.Text(&out, render.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	if v.Reproduced || len(v.Differences()) != 1 || !strings.Contains(v.Differences()[0], `"total stays ₦75,000" was expected to break`) {
		t.Fatalf("verdict %+v %v", v, v.Differences())
	}
	if !strings.Contains(out.String(), "verdict: NOT reproduced") {
		t.Fatalf("transcript:\n%s", out.String())
	}
}

// Each intent is checked both ways: twice is a break, and so is never.
func TestOnceEachCatchesAMissingTransfer(t *testing.T) {
	sc := &lab.Scenario{
		Name: "forgets-to-send",
		Run: func(ctx context.Context, lab *lab.Lab) error {
			lab.Intent("a tap that was acknowledged", 1, 2, 500, 1)
			return nil
		},
	}
	v, err := lab.Run(context.Background(), pgtest.Clones(), sc, lab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Reproduced || !strings.Contains(v.Results[2].Detail, "a tap that was acknowledged: never (should be once)") {
		t.Fatalf("%+v", v.Results)
	}
}

func TestMain(m *testing.M) {
	os.Exit(pgtest.Run(m, pgserver.Template{Prefix: "bank", Schema: api.SchemaText(), Setup: api.Setup}))
}
