package jsonshape

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestExamplesHaveTheirShape: each documented example is an output of its
// own shape, and the manual fits 80 columns.
func TestExamplesHaveTheirShape(t *testing.T) {
	for _, s := range Shapes {
		if err := Validate(s.Schema, []byte(s.Example)); err != nil {
			t.Errorf("%s: its example: %v", s.Schema, err)
		}
	}
	for i, l := range strings.Split(Manual(), "\n") {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("line %d of the manual is %d columns: %q", i+1, n, l)
		}
	}
}

// TestValidateRefuses: what breaks the convention is named.
func TestValidateRefuses(t *testing.T) {
	for _, c := range []struct{ out, want string }{
		{`{"schema":"bank.keys-gc/v1","olderThanMs":1,"deleted":null}`, "$.deleted is null"},
		{`{"schema":"bank.keys-gc/v1","olderThanMs":1}`, `$ has no "deleted"`},
		{`{"schema":"bank.keys-gc/v1","olderThanMs":1.5,"deleted":[]}`, "$.olderThanMs is the number 1.5, want integer"},
		{`{"schema":"bank.keys-gc/v1","olderThanMs":1,"deleted":[],"olderThan":"1h"}`, `$ has "olderThan", which its shape does not document`},
		{`{"schema":"bank.keys-gc/v1","olderThanMs":1,"deleted":[2]}`, "$.deleted[0] is the number 2, want string"},
		{`{"schema":"bank.status/v1","key":"k","status":"done"}`, `$.status is "done", want one of completed, in_progress, unknown`},
		{`{"schema":"bank.grade/v1"}`, `does not say "schema": "bank.keys-gc/v1"`},
		{`{"schema":"bank.keys-gc/v1","olderThanMs":1,"deleted":[]} {}`, "more than one JSON value"},
	} {
		want := "bank.keys-gc/v1"
		if strings.Contains(c.out, "bank.status/v1") {
			want = "bank.status/v1"
		}
		if err := Validate(want, []byte(c.out)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %s", c.out, err, c.want)
		}
	}
}

// TestEncodeWritesNoNull: nil lists and maps, at any depth, are written
// empty.
func TestEncodeWritesNoNull(t *testing.T) {
	type inner struct {
		Tags []string `json:"tags"`
	}
	v := struct {
		Names  []string         `json:"names"`
		Counts map[string]int   `json:"counts"`
		Items  []inner          `json:"items"`
		Byname map[string]inner `json:"byName"`
		Skip   []string         `json:"-"`
	}{Items: []inner{{}}}
	var b bytes.Buffer
	if err := Encode(&b, &v, false); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != `{"names":[],"counts":{},"items":[{"tags":[]}],"byName":{}}`+"\n" {
		t.Errorf("Encode wrote %s", got)
	}
}
