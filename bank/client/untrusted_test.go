package client

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// hostile holds what a server could send to take over a terminal: an OSC
// that sets the title, an OSC 52 that writes the clipboard, a CSI that
// clears the screen, the same as an 8-bit C1 CSI (U+009B), DEL, a line
// break that forges a line, a bidi override, a tag character beyond the
// BMP, and a byte that is not UTF-8, beside text that must stay readable.
const hostile = "\x1b]0;pwned\x07\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\x1b[H\u009b2J\x7f\nAll good: transfer made \u202e\U000E0041\xff ₦10,000 Ọlá"

func TestPrintableEscapesWhatATerminalWouldObey(t *testing.T) {
	t.Parallel()
	got := Printable([]byte(hostile))
	if bad := obeyed(got); bad != "" {
		t.Fatalf("Printable left %s in %q", bad, got)
	}
	for _, want := range []string{`\x1b]0;pwned\x07`, `\x1b[2J`, `\u009b2J`, `\x7f`, `\x0aAll good`, `\u202e`, `\ue0041`, `\xff`, "₦10,000 Ọlá"} {
		if !strings.Contains(got, want) {
			t.Errorf("Printable(%q) = %q, lacks %q", hostile, got, want)
		}
	}
	if plain := `{"transferId":7,"message":"₦10,000 to Bola"}`; Printable([]byte(plain)) != plain {
		t.Errorf("printable text changed: %q", Printable([]byte(plain)))
	}
}

func TestSafeJSONEscapesInsideStrings(t *testing.T) {
	t.Parallel()
	// Valid JSON may hold DEL, the C1 controls, format characters and
	// bytes that are not UTF-8 unescaped in its strings (the C0 controls
	// must be escaped, so they come escaped, as \u001b).
	doc := `{"z":1,"message":"` + "\u009b2J\x7f\u202e\U000E0041\xff" + ` \u001b]0;t\u0007 ₦ \"q\" \\","a":[true,null,2.5]}`
	if !json.Valid([]byte(doc)) {
		t.Fatalf("the test's document is not valid JSON: %q", doc)
	}
	got := SafeJSON([]byte(doc))
	want := `{"z":1,"message":"\u009b2J\u007f\u202e\udb40\udc41\ufffd \u001b]0;t\u0007 ₦ \"q\" \\","a":[true,null,2.5]}`
	if string(got) != want {
		t.Fatalf("SafeJSON:\n got %s\nwant %s", got, want)
	}
	if bad := obeyed(string(got)); bad != "" {
		t.Fatalf("SafeJSON left %s", bad)
	}
	var before, after map[string]any
	json.Unmarshal([]byte(doc), &before)
	json.Unmarshal(got, &after)
	if before["message"] != after["message"] {
		t.Errorf("the value changed: %q, then %q", before["message"], after["message"])
	}
	if SafeJSON([]byte("<html>")) != nil || SafeJSON([]byte(`{"a":`)) != nil {
		t.Error("SafeJSON of what is not JSON must be nil")
	}
}

// obeyed names the first thing in s a terminal would act on: a character
// that is not graphic (but a line feed), or a byte that is not UTF-8.
func obeyed(s string) string {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			return "a byte that is not UTF-8"
		case r != '\n' && !unicode.IsGraphic(r):
			return fmt.Sprintf("%U", r)
		}
	}
	return ""
}
