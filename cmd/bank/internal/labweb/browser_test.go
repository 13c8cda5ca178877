package labweb_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
	"github.com/zudojs/bank/scenarios/lab/procs"
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

// startLab starts bank lab on a free loopback port, on the tests'
// PostgreSQL, and returns its address (http://127.0.0.1:PORT).
func startLab(t *testing.T) string {
	spec := procs.Spec{Path: bankBinary(t), Args: []string{"lab", "--addr", "127.0.0.1:0"}, Env: []string{"BANK_CACHE_DIR=" + pgtest.CacheDir(t), "DATABASE_URL="}}
	lab, err := spec.StartReady(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Stop() })
	return lab.Addr
}

// selfContained fails the test if a page would fetch anything: the SVG
// namespace is a name, not a fetch.
func selfContained(t *testing.T, html string) {
	t.Helper()
	html = strings.ReplaceAll(html, `"http://www.w3.org/2000/svg"`, "")
	for _, remote := range []string{"http://", "https://", "src=", "@import"} {
		if strings.Contains(html, remote) {
			t.Errorf("the page would fetch something (%q): it must be self-contained", remote)
		}
	}
}

// openPage runs bank (the binary) with args, which write a page at
// path, checks that the page is self-contained, and opens it in the
// browser of ctx, for a minute at most.
func openPage(ctx context.Context, t *testing.T, bank, path string, args ...string) context.Context {
	t.Helper()
	cmd := exec.Command(bank, args...)
	cmd.Env = append(os.Environ(), "BANK_CACHE_DIR="+pgtest.CacheDir(t), "DATABASE_URL=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	html, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	selfContained(t, string(html))
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+path)); err != nil {
		t.Fatal(err)
	}
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
	// One fencing is one fenced arrow (the store refusing server A's
	// answer); the takeover is drawn twice (B taking the key over, and its
	// answer).
	if whole && (p.Arrows < 10 || p.Fenced != 1 || p.Takeover < 2) {
		t.Errorf("arrows %d (fenced %d, want 1; takeover %d): the crash's takeover and fencing are not drawn as they happened", p.Arrows, p.Fenced, p.Takeover)
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
	addr := startLab(t)

	step := func(ctx context.Context) (int, error) {
		return chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("svg.diagram line.arrow").length`))
	}
	// The first action starts the browser, which lives as long as the
	// context of that call: it gets the test's, and later ones a bound.
	if err := chromedp.Do(ctx, chromedp.Navigate(addr)); err != nil {
		t.Fatal(err)
	}
	for _, a := range []struct {
		what string
		do   chromedp.Action[chromedp.Void]
	}{
		{"find crash in the list", chromedp.WaitVisible(`a.entry[data-name="crash"][data-kind="scenario"]`)},
		{"pick crash", chromedp.Click(`a.entry[data-name="crash"][data-kind="scenario"]`)},
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
	ctx = openPage(ctx, t, bankBinary(t), page, "scenario", "crash", "--html", page)
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

// story is what the lab's own API says of one story: the title of each of
// its steps, counted through the whole story (a mistake's fixed half
// after its broken half), and the name of the run each belongs to.
type story struct{ titles, runs []string }

func askStory(t *testing.T, addr, kind, name string) story {
	t.Helper()
	res, err := http.Post(addr+"/api/run?kind="+kind+"&name="+name, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var runs []struct {
		Name  string `json:"name"`
		Steps []struct {
			Title string `json:"title"`
		} `json:"steps"`
	}
	if err := json.NewDecoder(res.Body).Decode(&runs); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("running %s %s: %s %v", kind, name, res.Status, err)
	}
	var s story
	for _, r := range runs {
		for _, st := range r.Steps {
			s.titles = append(s.titles, st.Title)
			s.runs = append(s.runs, r.Name)
		}
	}
	return s
}

type entry struct{ Kind, Name, Summary string }

// listed is what the page shows of one entry of its list at 1280×720.
type listed struct {
	Name   string `json:"name"`
	Found  bool   `json:"found"`
	Text   string `json:"text"`
	InView bool   `json:"inView"`
	OnTop  bool   `json:"onTop"` // what is drawn at its middle is the entry, not something over it
}

const readListed = `((names) => names.map((name) => {
	const a = document.querySelector('a.entry[data-name="' + name + '"]');
	if (!a || !a.offsetParent) return { name, found: false };
	const r = a.getBoundingClientRect();
	return {
		name, found: true, text: a.innerText.replace(/\s+/g, " ").trim(),
		inView: r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight && r.right <= innerWidth,
		onTop: a.contains(document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2)),
	};
}))(%s)`

// TestLabForTheRoom: the page as an instructor projects it, at 1280×720.
// Every story is listed with its summary, the scenarios and the mistakes
// in view at once; /#crash opens crash at its first step and /#crash/3 at
// its third; the address follows the arrow keys and the buttons, Esc
// goes back to the list, where the arrows move from story to story, back
// and forward go from story to story, and a name that is no story says so
// over the list.
func TestLabForTheRoom(t *testing.T) {
	ctx := chrome(t)
	addr := startLab(t)

	res, err := http.Get(addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	selfContained(t, string(page))
	res, err = http.Get(addr + "/api/entries")
	if err != nil {
		t.Fatal(err)
	}
	var entries []entry
	err = json.NewDecoder(res.Body).Decode(&entries)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	// The address is the name alone, so a name must be one story's, and
	// safe in an address as it is.
	seen := map[string]string{}
	var lastScenario, lastMistake entry
	for _, e := range entries {
		if k, dup := seen[e.Name]; dup {
			t.Errorf("%q is both a %s and a %s: /#%s cannot tell them apart", e.Name, k, e.Kind, e.Name)
		}
		seen[e.Name] = e.Kind
		if strings.Trim(e.Name, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			t.Errorf("%q: a story's name must be lower-case letters, digits and hyphens, to be its address", e.Name)
		}
		if e.Kind == "mistake" {
			lastMistake = e
		} else {
			lastScenario = e
		}
	}
	crash, noFencing := askStory(t, addr, "scenario", "crash"), askStory(t, addr, "mistake", "no-fencing")
	if len(crash.titles) < 3 || len(noFencing.titles) < 2 {
		t.Fatalf("crash has %d steps and no-fencing %d: this test steps through at least 3 and 2", len(crash.titles), len(noFencing.titles))
	}

	// A script that throws leaves a page half drawn: every exception
	// fails the test.
	var thrown struct {
		sync.Mutex
		said []string
	}
	err = chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			said := e.ExceptionDetails.Text
			if x := e.ExceptionDetails.Exception; x != nil && x.Description != "" {
				said = x.Description
			}
			thrown.Lock()
			thrown.said = append(thrown.said, said)
			thrown.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		thrown.Lock()
		defer thrown.Unlock()
		for _, said := range thrown.said {
			t.Errorf("the page's script threw: %s", said)
		}
	})
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 720)); err != nil {
		t.Fatal(err)
	}
	do := func(what string, a chromedp.Action[chromedp.Void]) {
		t.Helper()
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(actx, a); err != nil {
			said, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash + "\n" + document.body.innerText`))
			t.Fatalf("%s: %v\nthe page (its address, then its text):\n%s", what, err, said)
		}
	}
	// until waits for a JavaScript condition to hold in the page. Just
	// after a page loads, chromedp may still aim at the last page's
	// JavaScript context ("Cannot find context with specified id"): the
	// poll is tried again until the deadline, and the last error told.
	until := func(what, cond string) {
		t.Helper()
		do(what, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
			for {
				pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				_, err := chromedp.Poll[bool](cond, chromedp.WithPollingInterval(20*time.Millisecond))(pctx, t)
				cancel()
				if err == nil || ctx.Err() != nil {
					return chromedp.Void{}, err
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	// at is the condition that the page shows step n (from 1) of a story.
	at := func(name string, s story, n int) string {
		return fmt.Sprintf(`location.hash === %s && !document.getElementById("story").hidden && document.getElementById("step").textContent === %s && document.getElementById("title").textContent === %s && document.getElementById("status").textContent.startsWith(%s) && document.querySelector("svg.diagram") !== null`,
			js(fmt.Sprintf("#%s/%d", name, n)), js(s.titles[n-1]), js(s.runs[n-1]), js(fmt.Sprintf("step %d of %d", n, len(s.titles))))
	}
	const onList = `!document.getElementById("stories").hidden && document.getElementById("story").hidden`
	shoot := func(name string) {
		t.Helper()
		shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		notBlank(t, shot, name)
	}

	// The list: each entry with its summary, all in the viewport.
	do("open the page", chromedp.Navigate(addr+"/"))
	until("see the list", fmt.Sprintf(`document.querySelectorAll("a.entry").length === %d && %s`, len(entries), onList))
	want := []string{"crash", "no-fencing"}
	for _, e := range []entry{lastScenario, lastMistake} {
		if !slices.Contains(want, e.Name) {
			want = append(want, e.Name)
		}
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]listed](fmt.Sprintf(readListed, js(want))))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range got {
		var summary string
		for _, e := range entries {
			if e.Name == l.Name {
				summary = e.Summary
			}
		}
		switch {
		case !l.Found:
			t.Errorf("%s is not in the list", l.Name)
		case !l.InView || !l.OnTop:
			t.Errorf("%s is not in view at 1280×720 (in the viewport: %v; not covered: %v): the scenarios and the mistakes must all be seen at once", l.Name, l.InView, l.OnTop)
		case l.Text != l.Name+" "+summary:
			t.Errorf("%s is listed as %q, want its name and its summary %q", l.Name, l.Text, summary)
		}
	}
	shoot("lab-list-1280x720")

	// An address opens a story: its first step, or the step it names.
	do("leave the page", chromedp.Navigate("about:blank"))
	do("open /#crash", chromedp.Navigate(addr+"/#crash"))
	until("see crash's first step, and the address name it", at("crash", crash, 1))
	do("leave the page", chromedp.Navigate("about:blank"))
	do("open /#crash/3", chromedp.Navigate(addr+"/#crash/3"))
	until("see crash's third step", at("crash", crash, 3))
	shoot("lab-crash-3-1280x720")
	do("press W", chromedp.KeyEvent("w"))
	until("see the diagram alone, wider", `document.getElementById("side").offsetParent === null && document.querySelector("svg.diagram").getBoundingClientRect().width > 1000`)
	shoot("lab-crash-3-wide-1280x720")
	do("press W", chromedp.KeyEvent("w"))
	until("see the notes again", `document.getElementById("side").offsetParent !== null`)

	// Stepping moves the address along: the arrow keys and the buttons.
	do("press ←", chromedp.KeyEvent(kb.ArrowLeft))
	until("see step 2 after ←", at("crash", crash, 2))
	do("press →", chromedp.KeyEvent(kb.ArrowRight))
	until("see step 3 after →", at("crash", crash, 3))
	do("click back", chromedp.Click(`#prev`))
	until("see step 2 after back", at("crash", crash, 2))
	do("press End", chromedp.KeyEvent(kb.End))
	until("see the last step after End", at("crash", crash, len(crash.titles)))
	do("press Home", chromedp.KeyEvent(kb.Home))
	until("see step 1 after Home", at("crash", crash, 1))
	do("click next", chromedp.Click(`#next`))
	until("see step 2 after next", at("crash", crash, 2))

	// To the list and another story, then back and forward.
	do("press Esc", chromedp.KeyEvent(kb.Escape))
	until("see the list after Esc, crash picked out", onList+` && location.hash === "" && document.activeElement.dataset.name === "crash"`)
	var afterCrash string
	for i, e := range entries[:len(entries)-1] {
		if e.Name == "crash" {
			afterCrash = entries[i+1].Name
		}
	}
	do("press ↓", chromedp.KeyEvent(kb.ArrowDown))
	until("see ↓ move to the story after crash", fmt.Sprintf(`document.activeElement.dataset.name === %s`, js(afterCrash)))
	do("press ↑", chromedp.KeyEvent(kb.ArrowUp))
	until("see ↑ move back to crash", `document.activeElement.dataset.name === "crash"`)
	do("pick no-fencing", chromedp.Click(`a.entry[data-name="no-fencing"]`))
	until("see no-fencing's first step", at("no-fencing", noFencing, 1))
	do("press →", chromedp.KeyEvent(kb.ArrowRight))
	until("see no-fencing's second step", at("no-fencing", noFencing, 2))
	do("go back", chromedp.Evaluate[chromedp.Void](`history.back()`))
	until("see the list again", onList)
	do("go back", chromedp.Evaluate[chromedp.Void](`history.back()`))
	until("see crash where it was left", at("crash", crash, 2))
	do("go forward", chromedp.Evaluate[chromedp.Void](`history.forward()`))
	until("see the list after forward", onList)
	do("go forward", chromedp.Evaluate[chromedp.Void](`history.forward()`))
	until("see no-fencing where it was left", at("no-fencing", noFencing, 2))
	do("leave the page", chromedp.Navigate("about:blank"))
	do("open /#no-fencing/2", chromedp.Navigate(addr+"/#no-fencing/2"))
	until("see no-fencing's second step", at("no-fencing", noFencing, 2))

	// A name that is no story: a message, and the list.
	do("open /#no-such-story", chromedp.Evaluate[chromedp.Void](`location.hash = "no-such-story"`))
	until("see that there is no such story, over the list", onList+` && !document.getElementById("message").hidden && document.getElementById("message").textContent.includes("no-such-story") && document.querySelector('a.entry[data-name="crash"]').offsetParent !== null`)
	shoot("lab-unknown-1280x720")
}
