package card

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/grade"
)

// JUnit XML, as CI systems read it (GitHub Actions' test reporters,
// GitLab, Jenkins): one testsuite, one testcase per check; a failed check
// is a failure whose message is its one line and whose text is the
// mistake it looks like, where to see it done right and the evidence; a
// check that did not apply is skipped, with why.
type junitSuite struct {
	XMLName  xml.Name    `xml:"testsuite"`
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Props    []junitProp `xml:"properties>property"`
	Cases    []junitCase `xml:"testcase"`
}

type junitProp struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure"`
	Skipped   *junitMessage `xml:"skipped"`
	Output    string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// JUnit writes rep, the report card of g, as JUnit XML. took is the whole grade's wall time; the checks ran side
// by side, so none has a time of its own.
func JUnit(w io.Writer, rep grade.Report, g Graded, took time.Duration) error {
	s := junitSuite{
		Name: strings.Join(g.tool(), " "), Tests: len(rep.Results), Time: seconds(took),
		Props: []junitProp{{"command", g.command()}},
	}
	class := strings.Join(g.tool(), ".")
	for _, given := range g.Given {
		name, value, _ := strings.Cut(given, "=")
		s.Props = append(s.Props, junitProp{name, value})
	}
	s.Props = append(s.Props, junitProp{"points", fmt.Sprintf("%d of %d", rep.Points, rep.MaxPoints)})
	for _, r := range rep.Results {
		title := r.Title
		if !r.Required {
			title += " (recommended)"
		}
		c := junitCase{Name: r.Name + ": " + title, Classname: class, Time: "0", Output: strings.Join(r.Evidence, "\n")}
		switch r.Verdict {
		case grade.Fail:
			s.Failures++
			looksLike := r.LooksLike
			if looksLike == "" {
				looksLike = "none of the lesson's mistakes fits what was seen: read the evidence"
			}
			text := "looks like: " + looksLike + "\nsee it done right: " + r.See + "\nevidence:\n  " + strings.Join(r.Evidence, "\n  ")
			c.Failure = &junitMessage{Message: r.Why, Type: r.Mistake, Text: text}
		case grade.NA:
			s.Skipped++
			c.Skipped = &junitMessage{Message: r.Why}
		case grade.Unknown:
			s.Skipped++
			c.Skipped = &junitMessage{Message: "could not tell: " + r.Why}
		}
		s.Cases = append(s.Cases, c)
	}
	for _, name := range rep.NotRun {
		s.Tests++
		s.Skipped++
		s.Cases = append(s.Cases, junitCase{Name: name, Classname: class, Time: "0",
			Skipped: &junitMessage{Message: "not run: the grade stopped before it: " + rep.Stopped}})
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(s); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
