// Package jsonshape is the one convention every --json output of bank
// follows, and the documented shape of each: bank help json prints them,
// and the tests check every command's real output against them, so that
// the manual and the program cannot drift apart.
//
// The convention: each object names its shape in "schema" (such as
// "bank.grade/v1"; a later version changes the name); a command that
// judges says so in "verdict", always with the words pass, fail or
// unknown (grade adds stopped), and its exit status follows the verdict;
// lists are [] and maps {} when empty, never null, and a field that does
// not apply is left out rather than null; names are camelCase, amounts
// are in kobo with names ending in Kobo, durations in milliseconds with
// names ending in Ms.
package jsonshape

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
)

// Kind is what a value is.
type Kind string

const (
	String  Kind = "string"
	Integer Kind = "integer"
	Number  Kind = "number"
	Bool    Kind = "boolean"
	Object  Kind = "object"
	List    Kind = "list"
	Map     Kind = "map"
	Any     Kind = "any" // another program's JSON, passed on as it came
)

// Field is one member of an object, or the items of a list or the values
// of a map (Of).
type Field struct {
	Name     string
	Kind     Kind
	Doc      string
	Optional bool     // may be absent (it is never null)
	Words    []string // a string's only values
	Of       *Field   // a list's items, a map's values
	Fields   []Field  // an object's members
}

// Shape is the output of one command.
type Shape struct {
	Schema  string // the value of "schema"
	Command string // the command that prints it
	Lines   bool   // one object per line, rather than one object
	Doc     string
	Fields  []Field
	Example string // a real output, shortened
}

// Verdicts are the words of every "verdict".
var Verdicts = []string{"pass", "fail", "unknown"}

// Lookup finds a shape by its schema name.
func Lookup(schema string) (Shape, bool) {
	for _, s := range Shapes {
		if s.Schema == schema {
			return s, true
		}
	}
	return Shape{}, false
}

// Validate checks output, as a command printed it (one object, or one a
// line), against the shape named by want: every object must name that
// schema and hold the shape's members, each of its kind, and nothing
// else; no value may be null.
func Validate(want string, output []byte) error {
	shape, ok := Lookup(want)
	if !ok {
		return fmt.Errorf("no shape named %q", want)
	}
	docs := [][]byte{output}
	if shape.Lines {
		docs = bytes.Split(bytes.TrimRight(output, "\n"), []byte("\n"))
	}
	for i, doc := range docs {
		dec := json.NewDecoder(bytes.NewReader(doc))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("object %d is not JSON: %v", i+1, err)
		}
		if dec.More() {
			return fmt.Errorf("object %d: more than one JSON value", i+1)
		}
		if obj, ok := v.(map[string]any); !ok || obj["schema"] != want {
			return fmt.Errorf("object %d does not say \"schema\": %q", i+1, want)
		}
		if err := check(Field{Kind: Object, Fields: shape.Fields}, v, "$"); err != nil {
			return fmt.Errorf("object %d: %v", i+1, err)
		}
	}
	return nil
}

func check(f Field, v any, at string) error {
	if v == nil {
		return fmt.Errorf("%s is null (leave it out, or give an empty list or map)", at)
	}
	bad := func() error { return fmt.Errorf("%s is %s, want %s", at, kindOf(v), f.Kind) }
	switch f.Kind {
	case Any:
		return nil
	case String:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		if f.Words != nil && !slices.Contains(f.Words, s) {
			return fmt.Errorf("%s is %q, want one of %s", at, s, strings.Join(f.Words, ", "))
		}
	case Integer:
		n, ok := v.(json.Number)
		if _, err := n.Int64(); !ok || err != nil {
			return bad()
		}
	case Number:
		if _, ok := v.(json.Number); !ok {
			return bad()
		}
	case Bool:
		if _, ok := v.(bool); !ok {
			return bad()
		}
	case List:
		items, ok := v.([]any)
		if !ok {
			return bad()
		}
		for i, item := range items {
			if err := check(*f.Of, item, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case Map:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		for k, item := range m {
			if err := check(*f.Of, item, at+"."+k); err != nil {
				return err
			}
		}
	case Object:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		for _, member := range f.Fields {
			item, there := m[member.Name]
			if !there {
				if member.Optional {
					continue
				}
				return fmt.Errorf("%s has no %q", at, member.Name)
			}
			if err := check(member, item, at+"."+member.Name); err != nil {
				return err
			}
		}
		for k := range m {
			if !slices.ContainsFunc(f.Fields, func(member Field) bool { return member.Name == k }) {
				return fmt.Errorf("%s has %q, which its shape does not document", at, k)
			}
		}
	}
	return nil
}

func kindOf(v any) string {
	switch v := v.(type) {
	case string:
		return "a string"
	case json.Number:
		return "the number " + v.String()
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// Encode writes the report *v as one JSON object (indented with indent),
// with every nil list and map in it, at any depth, written as empty ([]
// and {}), never null.
func Encode(w io.Writer, v any, indent bool) error {
	emptyNotNil(reflect.ValueOf(v))
	enc := json.NewEncoder(w)
	if indent {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(v)
}

func emptyNotNil(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			emptyNotNil(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() && f.Tag.Get("json") != "-" {
				emptyNotNil(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.IsNil() && v.CanSet() {
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		}
		for i := range v.Len() {
			emptyNotNil(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() && v.CanSet() {
			v.Set(reflect.MakeMap(v.Type()))
		}
	}
}
