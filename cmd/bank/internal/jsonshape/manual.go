package jsonshape

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/zudojs/bank/scenarios/lab/render"
)

// Manual is the text of bank help json: the convention, then every
// shape with its members and an example. cmd/bank/help/json.txt is this
// text (a test keeps them equal; go test ./cmd/bank -run TestJSONTopic
// -update writes it).
func Manual() string {
	var b strings.Builder
	b.WriteString("What --json prints: one convention, and each command's shape\n\n")
	para := func(indent, s string) {
		cont := indent
		if strings.HasPrefix(indent, "  ") {
			cont += "    " // a member's text hangs under its name
		}
		for _, l := range render.Fold(indent+s, 80, cont) {
			b.WriteString(l + "\n")
		}
	}
	para("", `Every command that takes --json prints JSON of one convention. Each object names its shape in "schema", such as "bank.grade/v1"; a shape that changes gets a new name, so a script can tell which it reads. A command that judges says so in "verdict", always in the words pass, fail or unknown (bank grade adds stopped), and its exit status follows (0, 1, 4; bank help exit-codes). A list with nothing in it is [], a map {}, never null; a member that does not apply is left out. Names are camelCase; amounts are in kobo, named ...Kobo; durations in milliseconds, named ...Ms.`)
	b.WriteString("\n")
	para("", "The shapes below are checked against what each command really prints, in the lab's tests. Each member is listed with its kind; (optional) marks one that may be left out.")
	for _, s := range Shapes {
		b.WriteString("\n")
		para("", s.Schema+": "+s.Command)
		for _, l := range render.Fold("  "+s.Doc, 80, "  ") {
			b.WriteString(l + "\n")
		}
		fields(&b, s.Fields, "  ", para)
		b.WriteString("  for example:\n")
		var pretty bytes.Buffer
		for _, line := range strings.Split(s.Example, "\n") {
			pretty.Reset()
			if err := json.Indent(&pretty, []byte(line), "    ", "  "); err != nil {
				panic(fmt.Sprintf("the example of %s is not JSON: %v", s.Schema, err))
			}
			b.WriteString("    " + pretty.String() + "\n")
		}
	}
	return b.String()
}

func fields(b *strings.Builder, fs []Field, indent string, para func(indent, s string)) {
	for _, f := range fs {
		line := f.Name + ": " + kindText(f)
		if f.Optional {
			line += " (optional)"
		}
		if f.Doc != "" {
			line += "; " + f.Doc
		}
		para(indent, line)
		item := f
		if f.Of != nil {
			item = *f.Of
		}
		if item.Kind == Object && len(item.Fields) > 0 {
			fields(b, item.Fields, indent+"  ", para)
		}
	}
}

func kindText(f Field) string {
	switch {
	case len(f.Words) == 1:
		return fmt.Sprintf("%q", f.Words[0])
	case len(f.Words) > 1:
		return "one of " + strings.Join(f.Words, ", ")
	case f.Kind == List:
		return "list of " + plural(*f.Of)
	case f.Kind == Map:
		return "map of " + plural(*f.Of) + " by name"
	case f.Kind == Any:
		return "any JSON"
	}
	return string(f.Kind)
}

func plural(f Field) string {
	if f.Kind == Any {
		return "JSON values"
	}
	return string(f.Kind) + "s"
}
