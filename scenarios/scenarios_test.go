package scenarios_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/bank/pgserver"
	"github.com/zudojs/bank/bank/pgserver/pgtest"
	"github.com/zudojs/bank/scenarios"
)

var update = flag.Bool("update", false, "rewrite the golden files from real runs")

// bankBinary is built once: the memory-keys mistake starts bank serve
// processes of its own.
var bankBinary string

func TestMain(m *testing.M) {
	var remove func()
	var err error
	if bankBinary, remove, err = pgtest.BuildBank("../cmd/bank"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	code := pgtest.Run(m, pgserver.Template{Prefix: "bank", Version: api.Version(), Setup: api.Setup})
	remove()
	os.Exit(code)
}

const goldenDir = "../testdata/scenarios"

func run(t *testing.T, sc *scenarios.Scenario, o scenarios.Options) (string, scenarios.Verdict) {
	t.Helper()
	var out bytes.Buffer
	v, err := scenarios.Run(context.Background(), pgtest.Cluster(), sc, &out, o)
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), v
}

// drawn collects a run's recordings and draws them, each under its name.
type drawn struct{ recs []*scenarios.Recording }

func (d *drawn) record(r *scenarios.Recording) { d.recs = append(d.recs, r) }

func (d *drawn) String() string {
	var b bytes.Buffer
	for _, r := range d.recs {
		fmt.Fprintf(&b, "== %s\n", r.Scenario.Name)
		scenarios.DrawDiagram(&b, r, false)
		b.WriteString("\n")
	}
	return b.String()
}

// TestGolden runs every scenario twice, requires identical transcripts
// (nondeterminism shows up here first), then compares with the golden file.
func TestGolden(t *testing.T) {
	for _, sc := range scenarios.All {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			var d1, d2 drawn
			first, v := run(t, sc, scenarios.Options{Record: d1.record})
			second, _ := run(t, sc, scenarios.Options{Record: d2.record})
			if first != second {
				t.Fatalf("two runs printed different transcripts:\n%s", diff(first, second))
			}
			if d1.String() != d2.String() {
				t.Fatalf("two runs drew different diagrams:\n%s", diff(d1.String(), d2.String()))
			}
			if !v.Reproduced {
				t.Errorf("the lesson did not reproduce: %s", strings.Join(v.Differences(), "; "))
			}
			golden(t, filepath.Join(goldenDir, sc.Name+".golden"), first)
			golden(t, filepath.Join("../testdata/diagrams", sc.Name+".golden"), d1.String())
			checkWidth(t, d1.String())
		})
	}
}

// TestMistakesGolden runs each mistake (both halves) twice and compares
// with testdata/mistakes/NAME.golden.
func TestMistakesGolden(t *testing.T) {
	for _, m := range scenarios.Mistakes {
		t.Run(m.Name, func(t *testing.T) {
			t.Parallel()
			runOnce := func() (string, scenarios.MistakeVerdict, string) {
				var out bytes.Buffer
				var d drawn
				v, err := scenarios.RunMistake(context.Background(), pgtest.Cluster(), m, &out, scenarios.Options{Bank: bankBinary, Record: d.record})
				if err != nil {
					t.Fatal(err)
				}
				return out.String(), v, d.String()
			}
			first, v, d1 := runOnce()
			second, _, d2 := runOnce()
			if first != second {
				t.Fatalf("two runs printed different transcripts:\n%s", diff(first, second))
			}
			if d1 != d2 {
				t.Fatalf("two runs drew different diagrams:\n%s", diff(d1, d2))
			}
			golden(t, filepath.Join("../testdata/diagrams/mistakes", m.Name+".golden"), d1)
			checkWidth(t, d1)
			if !v.Reproduced() {
				t.Errorf("the mistake did not reproduce:\n%s", first)
			}
			golden(t, filepath.Join("../testdata/mistakes", m.Name+".golden"), first)
		})
	}
	files, _ := filepath.Glob("../testdata/mistakes/*.golden")
	for _, f := range files {
		if _, ok := scenarios.LookupMistake(strings.TrimSuffix(filepath.Base(f), ".golden")); !ok {
			t.Errorf("%s has no mistake", f)
		}
	}
}

// checkWidth: a diagram fits 100 columns.
func checkWidth(t *testing.T, drawing string) {
	t.Helper()
	for _, l := range strings.Split(drawing, "\n") {
		if n := utf8.RuneCountInString(l); n > 100 {
			t.Errorf("a diagram line is %d columns wide: %q", n, l)
		}
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no golden file: run go test ./scenarios -update and read %s", path)
	}
	if string(want) != got {
		t.Errorf("transcript differs from %s (rerun with go test ./scenarios -update if the change is intended):\n%s", path, diff(string(want), got))
	}
}

// TestEveryGoldenHasAScenario catches a golden file left behind by a
// renamed or removed scenario.
func TestEveryGoldenHasAScenario(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".golden")
		if _, ok := scenarios.Lookup(name); !ok {
			t.Errorf("%s has no scenario", f)
		}
	}
	if len(files) != len(scenarios.All) && !*update {
		t.Errorf("%d golden files for %d scenarios", len(files), len(scenarios.All))
	}
}

// diff shows the first differing lines with a little context.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("- " + wl + "\n+ " + gl + "\n")
		}
	}
	return b.String()
}
