package idem

import "strings"

// The Idempotency-Key header as it arrives. The IETF draft
// (draft-ietf-httpapi-idempotency-key-header, §2.1) makes it an RFC 8941
// Item whose value is a String, Idempotency-Key: "8e03978e-…"; the lesson,
// and most APIs, send the key bare, Idempotency-Key: 8e03978e-…. Both are
// taken, and name the same key. The rule:
//
//  1. More than one Idempotency-Key field line is not one Item (RFC 8941
//     §4.2 parses the lines joined by commas): invalid.
//  2. No line, or an empty one: no key (KeyRequired, in Store.Do).
//  3. A value that is itself a key of the lesson's shape (ValidKey) is
//     that key: the lesson's bare form. (RFC 8941 would read some such
//     keys, a UUID that starts with a digit, as no Item at all.) So is a
//     value of the key's characters longer than a key may be, so that
//     Store.Do says it is too long (KeyTooLong), whatever it starts with.
//  4. Anything else must parse as one RFC 8941 Item, strictly (§4.2),
//     whose bare item is a String (the draft's form) or a Token; its
//     text is the key. Its parameters, if any, are parsed and ignored:
//     the draft defines none, and RFC 8941 §2 asks fields not to treat
//     an unknown parameter as an error. An Integer, a Decimal, a Byte
//     Sequence or a Boolean, or a value that does not parse: invalid.
//  5. The key found must be of the lesson's shape, 16 to 64 letters,
//     digits, - or _; Store.Do refuses one longer than 64 as KeyTooLong,
//     and any other as KeyRequired, as it did before the quoted form was
//     taken.
//
// So "abc…" and abc… are one key: the quoted request stores it, and its
// bare twin is replayed.

// KeyFromHeader reads the key from the Idempotency-Key field lines of a
// request (http.Header.Values). ok is false when the field is not one
// Item (rule 1 or 4): the answer is KeyInvalid. An absent or empty field
// is ("", true).
func KeyFromHeader(lines []string) (key string, ok bool) {
	switch {
	case len(lines) == 0:
		return "", true
	case len(lines) > 1:
		return "", false
	}
	v := strings.Trim(lines[0], " \t")
	switch {
	case v == "":
		return "", true
	case ValidKey(v), len(v) > MaxKeyLength && keyChars(v):
		return v, true
	}
	return parseKeyItem(v)
}

// parseKeyItem parses v as one RFC 8941 Item (§4.2.3) and returns the
// text of its String or Token.
func parseKeyItem(v string) (string, bool) {
	var key, rest string
	var ok bool
	switch c := v[0]; {
	case c == '"':
		key, rest, ok = sfString(v)
	case isAlpha(c) || c == '*':
		key, rest = sfToken(v)
		ok = true
	}
	if !ok {
		return "", false
	}
	if rest, ok = sfParameters(rest); !ok || strings.TrimLeft(rest, " ") != "" {
		return "", false
	}
	return key, true
}

// sfBareItem parses any RFC 8941 bare item (§4.2.3.1) and returns what
// follows it.
func sfBareItem(s string) (rest string, ok bool) {
	if s == "" {
		return "", false
	}
	switch c := s[0]; {
	case c == '-' || isDigit(c):
		return sfNumber(s)
	case c == '"':
		_, rest, ok = sfString(s)
		return rest, ok
	case isAlpha(c) || c == '*':
		_, rest = sfToken(s)
		return rest, true
	case c == ':':
		return sfByteSequence(s)
	case c == '?':
		if len(s) >= 2 && (s[1] == '0' || s[1] == '1') {
			return s[2:], true
		}
	}
	return "", false
}

// sfString parses a String (§4.2.5): DQUOTE, printable ASCII with \" and
// \\ escaped, DQUOTE.
func sfString(s string) (text, rest string, ok bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
			if i == len(s) || s[i] != '"' && s[i] != '\\' {
				return "", "", false
			}
			b.WriteByte(s[i])
		case c == '"':
			return b.String(), s[i+1:], true
		case c < 0x20 || c > 0x7e:
			return "", "", false
		default:
			b.WriteByte(c)
		}
	}
	return "", "", false // no closing quote
}

// sfToken parses a Token (§4.2.6); s starts with ALPHA or "*".
func sfToken(s string) (text, rest string) {
	i := 1
	for i < len(s) && (isTchar(s[i]) || s[i] == ':' || s[i] == '/') {
		i++
	}
	return s[:i], s[i:]
}

// sfNumber parses an Integer or a Decimal (§4.2.4).
func sfNumber(s string) (rest string, ok bool) {
	i := 0
	if s[0] == '-' {
		i++
	}
	if i == len(s) || !isDigit(s[i]) {
		return "", false
	}
	start, dot := i, -1
	for ; i < len(s); i++ {
		c := s[i]
		if isDigit(c) {
			continue
		}
		if c == '.' && dot < 0 {
			if i-start > 12 {
				return "", false
			}
			dot = i
			continue
		}
		break
	}
	n := i - start
	switch {
	case dot < 0 && n > 15:
		return "", false
	case dot >= 0 && (n > 16 || dot == i-1 || i-dot-1 > 3):
		return "", false
	}
	return s[i:], true
}

// sfByteSequence parses a Byte Sequence (§4.2.7): base64 between colons.
func sfByteSequence(s string) (rest string, ok bool) {
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == ':':
			return s[i+1:], true
		case isAlpha(c) || isDigit(c) || c == '+' || c == '/' || c == '=':
		default:
			return "", false
		}
	}
	return "", false
}

// sfParameters parses Parameters (§4.2.3.2): ;key or ;key=bare-item,
// each after optional spaces.
func sfParameters(s string) (rest string, ok bool) {
	for len(s) > 0 && s[0] == ';' {
		s = strings.TrimLeft(s[1:], " ")
		// A key (§4.2.3.3): lcalpha or "*", then lcalpha, DIGIT, _ - . *
		if s == "" || !(isLower(s[0]) || s[0] == '*') {
			return "", false
		}
		i := 1
		for i < len(s) && (isLower(s[i]) || isDigit(s[i]) || strings.IndexByte("_-.*", s[i]) >= 0) {
			i++
		}
		s = s[i:]
		if len(s) > 0 && s[0] == '=' {
			if s, ok = sfBareItem(s[1:]); !ok {
				return "", false
			}
		}
	}
	return s, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isAlpha(c byte) bool { return isLower(c) || c >= 'A' && c <= 'Z' }

// isTchar is RFC 9110's tchar.
func isTchar(c byte) bool {
	return isAlpha(c) || isDigit(c) || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
