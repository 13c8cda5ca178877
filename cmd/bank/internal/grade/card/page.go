package card

import (
	"html/template"
	"io"
	"strings"

	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/scenarios/lab/render"
)

// pageCSS is render's style for the pictures, and the card's own lines.
const pageCSS = `
.na { color: #555; font-weight: bold; } table.card a { color: #003c8f; }
section.check { border-top: 1px solid #ccc; margin-top: 1.5em; } section.check h2 { margin-top: .8em; }
.why { margin: .2em 0 .6em; } .mistake { margin: .2em 0 .6em; } code { font-family: ui-monospace, monospace; }
`

var gradePage = template.Must(template.New("grade").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{{.Tool}}: {{.Command}}</title>
<style>{{.CSS}}</style></head>
<body>
<h1>report card for: {{.Command}}</h1>
<p class="summary">{{if .Given}}{{.Given}}. {{end}}{{.Tally}}. verdict: <span class="{{.VerdictClass}}">{{.Verdict}}</span> ({{.VerdictWhy}})</p>
<p class="note">{{.Note}}</p>
<table class="keys card"><tr><th>check</th><th>verdict</th><th>what it throws</th></tr>
{{range .Checks}}<tr><td><a href="#check-{{.Name}}">{{.Name}}</a></td><td class="{{.Class}}">{{.Mark}}</td><td>{{.Title}}</td></tr>
{{end}}{{range .NotRun}}<tr><td>{{.}}</td><td class="na">not run</td><td>(the grade stopped before it)</td></tr>
{{end}}</table>
{{range .Checks}}<section class="check" id="check-{{.Name}}" data-check="{{.Name}}" data-verdict="{{.Verdict}}">
<h2><span class="{{.Class}}">{{.Mark}}</span> {{.Name}}: {{.Title}}</h2>
<p class="why">{{.Why}}</p>
{{if .Failed}}<p class="mistake">looks like: {{.LooksLike}}<br>see it done right: <code>{{.See}}</code></p>
{{end}}{{.SVG}}
<pre class="lines">{{range .Evidence}}{{.}}
{{end}}</pre>
</section>
{{end}}</body></html>
`))

// pageNote says what the lanes of a check's diagram are.
var pageNote = map[string]string{
	"server":   "Each check's diagram is what the grader did and saw, as it happened, the clock counting from the check's start. app is the grader's own client, which also throws the faults (it kills, pauses and restarts the servers) and holds its own locks in PostgreSQL; proxy is the grader's proxy in front of each server, which can lose a reply after the server sent it; server A (and B) are your server's processes.",
	"client":   "Each check's diagram is what the grader saw, as it happened, the clock counting from the check's start. client is your client (its runs, and the kill that ends one); front is the grader's front before the bank, which throws the check's fault (a reply lost, an attempt held unanswered, an answer of its own); bank is the lesson's bank, served by the grader.",
	"consumer": "Each check's diagram is what the grader did and saw, as it happened, the clock counting from the check's start. provider is the grader playing the payment provider, which signs and delivers each event; consumer is your program; bank is its database, where the grader holds a transaction at its first write (the gate) and sees what it wrote.",
}

// pageCheck is one check as the page shows it.
type pageCheck struct {
	Name, Title, Verdict, Mark, Class string
	Why, LooksLike, See               string
	Failed                            bool
	Evidence                          []string
	SVG                               template.HTML
}

// Page writes rep, the report card of g, as one self-contained web page: the card, then each check with its
// verdict, why, the mistake a failure looks like and where to see it
// done right, its diagram (as SVG, drawn by render as the scenarios' are)
// and its evidence. Nothing is fetched.
func Page(w io.Writer, rep grade.Report, g Graded) error {
	data := struct {
		CSS                               template.CSS
		Tool, Command, Given, Tally, Note string
		Verdict, VerdictWhy, VerdictClass string
		Checks                            []pageCheck
		NotRun                            []string
	}{CSS: template.CSS(render.PageCSS + pageCSS), Tool: strings.Join(g.tool(), " "), Command: g.command(), Given: strings.Join(g.Given, " "), Note: pageNote[g.of()],
		Tally: tally(rep), NotRun: rep.NotRun, VerdictClass: map[bool]string{true: "holds", false: "broken"}[rep.Verdict == grade.Pass]}
	data.Verdict, data.VerdictWhy = verdict(rep)
	for _, r := range rep.Results {
		c := pageCheck{Name: r.Name, Title: r.Title, Verdict: r.Verdict, Why: r.Why, See: r.See, Evidence: r.Evidence, Failed: r.Verdict == grade.Fail}
		if !r.Required {
			c.Title += " (recommended)"
		}
		switch r.Verdict {
		case grade.Pass:
			c.Mark, c.Class = "pass", "holds"
		case grade.Fail:
			c.Mark, c.Class, c.LooksLike = "FAIL", "broken", looksLike(r)
		case grade.Unknown:
			c.Mark, c.Class = "unknown", "na"
		default:
			c.Mark, c.Class = "n/a", "na"
		}
		if r.Recording != nil {
			c.SVG = template.HTML(render.SVG(r.Recording, 1<<30)) // built from escaped text only
		}
		data.Checks = append(data.Checks, c)
	}
	data.Tally = tally(rep)
	return gradePage.Execute(w, data)
}
