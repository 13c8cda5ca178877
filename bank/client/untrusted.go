package client

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// What a server sends is not to be trusted, and a terminal obeys the
// bytes it is given: an escape sequence from a server can set the
// window's title, write the clipboard (OSC 52), or clear the screen and
// print a verdict of its own. So nothing a server sent reaches the
// caller's terminal as it came: Printable for text, SafeJSON for JSON.
// Printable UTF-8 (₦, names in any script) stays as it is.

// Printable returns b as text that is safe to write to a terminal: every
// character that is not graphic (C0 and C1 controls, ESC and DEL, line
// breaks, bidirectional and other format characters) and every byte that
// is not UTF-8 is written as an escape: \x1b, \x9b, \u202e.
func Printable(b []byte) string {
	var out strings.Builder
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&out, `\x%02x`, b[0])
		case r < utf8.RuneSelf && !unicode.IsGraphic(r):
			fmt.Fprintf(&out, `\x%02x`, r)
		case !unicode.IsGraphic(r):
			fmt.Fprintf(&out, `\u%04x`, r)
		default:
			out.Write(b[:size])
		}
		b = b[size:]
	}
	return out.String()
}

// SafeJSON returns the JSON document b with every character of its
// strings that is not graphic, and every byte that is not UTF-8, written
// as a JSON escape (\u001b, \u009b, \ufffd): the same values, nothing a
// terminal could act on, printable text unchanged, keys in their order.
// It returns nil when b is not valid JSON.
//
// encoding/json would pass a json.RawMessage on as it is, and a valid
// document may hold DEL, the C1 controls (U+009B is CSI on many
// terminals) and bytes that are not UTF-8 unescaped in its strings.
func SafeJSON(b []byte) json.RawMessage {
	if !json.Valid(b) {
		return nil
	}
	out := make([]byte, 0, len(b))
	inString, escaped := false, false
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		switch {
		case !inString:
			// Outside strings a valid document holds only ASCII: structure,
			// numbers, literals and white space.
			inString = r == '"'
			out = append(out, b[:size]...)
		case escaped:
			escaped = false
			out = append(out, b[:size]...)
		case r == '\\':
			escaped = true
			out = append(out, '\\')
		case r == '"':
			inString = false
			out = append(out, '"')
		case r == utf8.RuneError && size == 1:
			out = append(out, `\ufffd`...)
		case !unicode.IsGraphic(r):
			if r1, r2 := utf16.EncodeRune(r); r1 != unicode.ReplacementChar {
				out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
			} else {
				out = fmt.Appendf(out, `\u%04x`, r)
			}
		default:
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	return out
}
