package labweb_test

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/zudojs/bank/bank/pgserver/pgtest"
	"github.com/zudojs/bank/bank/procs"
)

// browser finds Chromium. In CI (BANK_REQUIRE_BROWSER set by .ci/run)
// a missing browser fails the test; elsewhere it says so, loudly.
func browser(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("BANK_REQUIRE_BROWSER") != "" {
		t.Fatal("Chromium is not installed, and this run requires it: apt-get install chromium")
	}
	pgtest.Skip(t, "CHROMIUM IS MISSING: the browser tests of bank lab and --html did NOT run; install it (apt-get install chromium) to run them")
	return ""
}

// chrome starts a headless Chromium for the test.
func chrome(t *testing.T) context.Context {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser(t)), chromedp.NoSandbox, chromedp.WindowSize(1400, 1000))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	return ctx
}

func bankBinary(t *testing.T) string {
	bin, clean, err := pgtest.BuildBank("github.com/zudojs/bank/cmd/bank")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(clean)
	return bin
}

// crashPicture is what a page must show of the crash story, read from
// the page itself.
type crashPicture struct {
	Lanes    []string `json:"lanes"`
	Arrows   int      `json:"arrows"`
	Fenced   int      `json:"fenced"`
	Takeover int      `json:"takeover"`
	Text     string   `json:"text"`
}

const readPicture = `(() => {
	const svg = document.querySelector("svg.diagram");
	return {
		lanes: [...svg.querySelectorAll("line.lane")].map((l) => l.dataset.actor),
		arrows: svg.querySelectorAll("line.arrow").length,
		fenced: svg.querySelectorAll("line.arrow.fenced").length,
		takeover: svg.querySelectorAll("line.arrow.takeover").length,
		text: document.body.innerText,
	};
})()`

func checkCrash(t *testing.T, p crashPicture, whole bool) {
	t.Helper()
	if strings.Join(p.Lanes, ",") != "app,server A,server B,PostgreSQL" {
		t.Errorf("lanes %v, want app, server A, server B, PostgreSQL", p.Lanes)
	}
	if whole && (p.Arrows < 10 || p.Fenced < 2 || p.Takeover < 2) {
		t.Errorf("arrows %d (fenced %d, takeover %d): the crash's takeover and fencing are not drawn", p.Arrows, p.Fenced, p.Takeover)
	}
	if whole && !strings.Contains(p.Text, "Ada ₦40,000, Bola ₦15,000, Chidi ₦20,000 | total ₦75,000 | transfers 1") {
		t.Errorf("the final balances are not on the page:\n%s", p.Text)
	}
}

// notBlank saves a screenshot as NAME.png in the test's artifact
// directory (kept with go test -artifacts, to look at) and checks it has
// a picture in it: many colours, and a fair share of pixels that are not
// the background.
func notBlank(t *testing.T, shot []byte, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), name+".png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	colours, inked, total := map[uint32]bool{}, 0, 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[(r>>8)<<16|(g>>8)<<8|bl>>8] = true
			if r < 0xe000 || g < 0xe000 || bl < 0xe000 {
				inked++
			}
			total++
		}
	}
	if len(colours) < 8 || inked*100 < total {
		t.Errorf("%s looks blank: %d colours, %d of %d pixels inked", name, len(colours), inked, total)
	}
}

// TestLabInBrowser: bank lab, used end to end in Chromium: pick crash,
// run it on PostgreSQL, step to the end and back, and read the diagram,
// the balances and the invariants off the page.
func TestLabInBrowser(t *testing.T) {
	ctx := chrome(t)
	spec := procs.Spec{Path: bankBinary(t), Args: []string{"lab", "--addr", "127.0.0.1:0"}, Env: []string{"BANK_CACHE_DIR=" + pgtest.CacheDir(t), "DATABASE_URL="}}
	lab, err := spec.StartReady(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Stop() })

	step := func(ctx context.Context) (int, error) {
		return chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("svg.diagram line.arrow").length`))
	}
	// The first action starts the browser, which lives as long as the
	// context of that call: it gets the test's, and later ones a bound.
	if err := chromedp.Do(ctx, chromedp.Navigate(lab.Addr)); err != nil {
		t.Fatal(err)
	}
	for _, a := range []struct {
		what string
		do   chromedp.Action[chromedp.Void]
	}{
		{"find crash in the list", chromedp.WaitVisible(`nav button[data-name="crash"][data-kind="scenario"]`)},
		{"pick crash", chromedp.Click(`nav button[data-name="crash"][data-kind="scenario"]`)},
		{"see the run: its controls and its diagram", func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Poll[bool](`!document.getElementById("controls").hidden && document.querySelector("svg.diagram") !== null`,
				chromedp.WithPollingInterval(20*time.Millisecond))(ctx, t)
			return chromedp.Void{}, err
		}},
	} {
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := chromedp.Do(actx, a.do)
		cancel()
		if err != nil {
			said, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("summary").textContent`))
			t.Fatalf("%s: %v (the page says: %s)", a.what, err, said)
		}
	}
	// Step to the end: the diagram grows at each step.
	last := -1
	for i := 0; i < 20; i++ {
		n, err := step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n < last {
			t.Fatalf("step %d: the diagram shrank going forward (%d arrows after %d)", i, n, last)
		}
		last = n
		done, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("next").disabled`))
		if err != nil {
			t.Fatal(err)
		}
		if done {
			break
		}
		if err := chromedp.Do(ctx, chromedp.Click(`#next`)); err != nil {
			t.Fatal(err)
		}
	}
	p, err := chromedp.Run(ctx, chromedp.Evaluate[crashPicture](readPicture))
	if err != nil {
		t.Fatal(err)
	}
	checkCrash(t, p, true)
	if strings.Count(p.Text, "holds") < 3 {
		t.Errorf("the invariants are not shown at the last step:\n%s", p.Text)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	notBlank(t, shot, "lab-crash")
	// One step back: fewer arrows. The click's handler runs in the page
	// after the click returns, so the page is given a moment (it failed
	// once under make test's load when read at once).
	if err := chromedp.Do(ctx, chromedp.Click(`#prev`)); err != nil {
		t.Fatal(err)
	}
	bctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err = chromedp.Do(bctx, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Poll[bool](fmt.Sprintf(`document.querySelectorAll("svg.diagram line.arrow").length < %d`, last),
			chromedp.WithPollingInterval(20*time.Millisecond))(ctx, t)
		return chromedp.Void{}, err
	})
	if err != nil {
		n, _ := step(ctx)
		t.Errorf("a step back still shows %d arrows (of %d) after 5 s: %v", n, last, err)
	}
}

// TestHTMLPageInBrowser: bank scenario crash --html makes a page that
// opens offline and shows the lanes, the arrows and the final balances.
func TestHTMLPageInBrowser(t *testing.T) {
	ctx := chrome(t)
	page := filepath.Join(t.TempDir(), "crash.html")
	cmd := exec.Command(bankBinary(t), "scenario", "crash", "--html", page)
	cmd.Env = append(os.Environ(), "BANK_CACHE_DIR="+pgtest.CacheDir(t), "DATABASE_URL=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, remote := range []string{"http://", "https://", "src=", "@import"} {
		if strings.Contains(strings.ReplaceAll(string(html), `xmlns="http://www.w3.org/2000/svg"`, ""), remote) {
			t.Errorf("the page would fetch something (%q): it must be self-contained", remote)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+page)); err != nil {
		t.Fatal(err)
	}
	p, err := chromedp.Run(ctx, chromedp.Evaluate[crashPicture](readPicture))
	if err != nil {
		t.Fatal(err)
	}
	checkCrash(t, p, true)
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	notBlank(t, shot, "html-crash")
}
