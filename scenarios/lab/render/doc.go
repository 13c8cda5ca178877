// Package render draws a run's recorded events (package scenarios/lab):
// the transcript, the JSON lines, the sequence diagram in the terminal or
// as SVG, and the web page, all from the one stream of events.
package render
