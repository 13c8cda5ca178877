package idem_test

import (
	"strings"
	"testing"

	"github.com/zudojs/bank/idem"
)

// TestKeyFromHeader: the field's rule, case by case. A key comes bare (the
// lesson's) or as an RFC 8941 String (the draft's), its parameters
// ignored; two lines, or a value that is not one String or Token Item, is
// invalid; what the inner value must look like is ValidKey's business.
func TestKeyFromHeader(t *testing.T) {
	const uuid = "8e03978e-40d5-43e8-bc93-6894a57f9324"
	for _, c := range []struct {
		lines []string
		key   string
		ok    bool
	}{
		{nil, "", true},
		{[]string{""}, "", true},
		{[]string{"  "}, "", true},
		{[]string{uuid}, uuid, true},                 // bare, though RFC 8941 reads no Item in it
		{[]string{`"` + uuid + `"`}, uuid, true},     // the draft's form
		{[]string{` "` + uuid + `" `}, uuid, true},   // spaces around an Item
		{[]string{`"` + uuid + `";v=1`}, uuid, true}, // a parameter, ignored
		{[]string{`"` + uuid + `"; v=1;w;x="y";z=?0`}, uuid, true},
		{[]string{`"` + uuid + `";v=1.5;b=:aGk=:;t=tok/x`}, uuid, true},
		{[]string{"grade-plain-0000001;v=1"}, "grade-plain-0000001", true}, // a Token with a parameter
		{[]string{"short"}, "short", true},                                 // a Token: ValidKey refuses it, as before
		{[]string{`"short"`}, "short", true},                               // so is a short String
		{[]string{`"has spaces in it, 0123"`}, "has spaces in it, 0123", true},
		{[]string{`"a\"b\\c-0123456789abc"`}, `a"b\c-0123456789abc`, true},
		{[]string{uuid, uuid}, "", false},                                 // two lines
		{[]string{`"` + uuid + `"`, ""}, "", false},                       // two lines, one empty
		{[]string{`"a-key-of-sixteen1", "b-key-of-sixteen1"`}, "", false}, // a List
		{[]string{`"` + uuid}, "", false},                                 // unterminated
		{[]string{`"` + uuid + `"x`}, "", false},                          // data after the Item
		{[]string{`"` + uuid + `";V=1`}, "", false},                       // a parameter key in capitals
		{[]string{`"` + uuid + `";v=`}, "", false},                        // a parameter with no value
		{[]string{`"a\qb-0123456789abcdef"`}, "", false},
		{[]string{"\"caf\u00e9-0123456789abcdef\""}, "", false}, // not ASCII
		{[]string{"1234.5"}, "", false},                         // a Decimal
		{[]string{"?1"}, "", false},                             // a Boolean
		{[]string{":aGVsbG8=:"}, "", false},                     // a Byte Sequence
		{[]string{"key with spaces!"}, "", false},
		{[]string{"ab\x7fcd"}, "", false},
		{[]string{"'single-quoted-key-01'"}, "", false},
	} {
		key, ok := idem.KeyFromHeader(c.lines)
		if key != c.key || ok != c.ok {
			t.Errorf("%q: got (%q, %v), want (%q, %v)", c.lines, key, ok, c.key, c.ok)
		}
	}
}

// TestQuotedKeysRoundTrip: a key a client quotes as an RFC 8941 String,
// its \ and " escaped (bank/client's KeyField), reads back as itself.
func TestQuotedKeysRoundTrip(t *testing.T) {
	for _, key := range []string{"8e03978e-40d5-43e8-bc93-6894a57f9324", `odd"key\with-quotes`} {
		field := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
		if got, ok := idem.KeyFromHeader([]string{field}); !ok || got != key {
			t.Errorf("%s read back as (%q, %v)", field, got, ok)
		}
	}
}

// FuzzKeyFromHeader: whatever the field, the reader never panics, and a
// key it returns from a value that is not bare came out of quotes or a
// Token, never with the quotes still on.
func FuzzKeyFromHeader(f *testing.F) {
	for _, s := range []string{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`, "abc;a=1;b", `"x";k=:YQ==:`, "-12.345", `"\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		key, ok := idem.KeyFromHeader([]string{s})
		if ok && idem.ValidKey(key) && len(key) > 0 && (key[0] == '"' || key[len(key)-1] == '"') {
			t.Fatalf("%q gave the key %q", s, key)
		}
	})
}
