package render

import (
	"html/template"
	"io"

	"github.com/zudojs/bank/scenarios/lab"
)

// PageCSS is the pictures' style, shared by --html pages and bank lab:
// large, high-contrast type for a projector, and a print layout.
const PageCSS = `
body { font-family: system-ui, sans-serif; font-size: 17px; color: #111; background: #fff; margin: 1.5em auto; max-width: 1200px; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: .2em; } h2 { font-size: 1.25em; margin: 1.2em 0 .3em; }
.summary { color: #333; margin-top: 0; }
.diagram { max-width: 100%; height: auto; border: 1px solid #ccc; background: #fff; }
.diagram .actor { font-weight: bold; font-size: 15px; }
.diagram .lane { stroke: #999; stroke-dasharray: 4 3; }
.diagram .arrow { stroke: #222; stroke-width: 1.6; }
.diagram .arrow.lost, .diagram .arrow.fenced, .diagram .arrow.error { stroke: #c00; stroke-width: 2.2; }
.diagram .arrow.takeover, .diagram .arrow.in-progress, .diagram .arrow.refused { stroke: #b36b00; stroke-width: 2; }
.diagram .arrow.replayed { stroke: #070; stroke-width: 2; }
.diagram .arrow.lost { stroke-dasharray: 6 4; }
.diagram .cross { fill: #c00; font-size: 18px; font-weight: bold; }
.diagram .label { fill: #111; } .diagram .label.lost, .diagram .label.fenced, .diagram .label.error { fill: #c00; font-weight: bold; }
.diagram .label.takeover { fill: #b36b00; font-weight: bold; } .diagram .label.replayed { fill: #070; }
.diagram .note { fill: #555; font-style: italic; } .diagram .balances { fill: #000; font-weight: bold; }
.diagram .step { fill: #003c8f; font-weight: bold; } .diagram .clock { fill: #003c8f; font-weight: bold; }
.step-card { border-left: 4px solid #003c8f; padding: .2em 0 .4em 1em; margin: 1em 0; page-break-inside: avoid; }
.note { color: #444; white-space: pre-wrap; } .drawing { font-family: ui-monospace, monospace; font-size: .85em; color: #444; overflow-x: auto; } .drawing:empty { display: none; } .lines { font-family: ui-monospace, monospace; font-size: .9em; white-space: pre-wrap; margin: .3em 0; }
.balances { font-weight: bold; } table.keys { border-collapse: collapse; font-size: .9em; margin-top: .3em; }
table.keys td, table.keys th { border: 1px solid #bbb; padding: .15em .5em; text-align: left; }
.holds { color: #070; font-weight: bold; } .broken { color: #c00; font-weight: bold; }
@media print { body { max-width: none; font-size: 12pt; } .diagram { border: none; } .diagram, .step-card, table.keys { break-inside: avoid; } }
`

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>bank: {{range $i, $r := .Runs}}{{if $i}}, {{end}}{{$r.Name}}{{end}}</title>
<style>{{.CSS}}</style></head>
<body>
{{range .Runs}}<section class="run" data-scenario="{{.Name}}">
<h1>{{.Name}}</h1><p class="summary">{{.Summary}}</p>
{{if .About}}<p class="note">{{.About}}</p>{{end}}
{{.SVG}}
{{range .Steps}}<div class="step-card"><h2>{{.Title}}</h2>
{{if .Note}}<p class="note">{{.Note}}</p>{{end}}
{{if .Drawing}}<pre class="drawing">{{.Drawing}}</pre>{{end}}
{{if .Lines}}<pre class="lines">{{range .Lines}}{{.}}
{{end}}</pre>{{end}}
<p class="balances">{{.Balances}}</p>
{{if .Keys}}<table class="keys"><tr><th>user</th><th>key</th><th>status</th><th>locked until</th><th>stored answer</th></tr>
{{range .Keys}}<tr><td>{{.User}}</td><td>{{.Key}}</td><td>{{.Status}}</td><td>{{.Until}}</td><td>{{.Response}}</td></tr>
{{end}}</table>{{else}}<p class="note">no idempotency keys</p>{{end}}
</div>{{end}}
<h2>invariants</h2><ul class="checks">{{range .Checks}}<li><span class="{{if .Holds}}holds{{else}}broken{{end}}">{{if .Holds}}holds{{else}}BROKEN{{end}}</span> {{.Name}} {{.Detail}}</li>{{end}}</ul>
</section>
{{end}}</body></html>
`))

// pageRun is one recording as the page template reads it.
type pageRun struct {
	Name, Summary string
	About         string // what --explain says under the title
	SVG           template.HTML
	Steps         []StepView
	Checks        []lab.Result
}

// WriteHTML writes recorded runs as one self-contained page: the diagram
// as SVG, then each step with its note, its lines, the balances and the
// idempotency keys at its end, then the invariants. Nothing is fetched.
func WriteHTML(w io.Writer, recs []*Recording) error {
	data := struct {
		CSS  template.CSS
		Runs []pageRun
	}{CSS: template.CSS(PageCSS)}
	for _, r := range recs {
		data.Runs = append(data.Runs, pageRun{
			Name: r.Scenario.Name, Summary: r.Scenario.Summary, About: r.Scenario.About,
			SVG:   template.HTML(SVG(r, 1<<30)), // built from escaped text only
			Steps: Steps(r), Checks: r.Verdict.Results,
		})
	}
	return pageTemplate.Execute(w, data)
}
