package syncevent

// MaxPayloadDepth is the deepest nesting of arrays and objects a payload
// may have, the payload object itself being level 1. A GET page puts each
// payload three levels down (page object, events array, event object), so
// a page is at most MaxPayloadDepth+3 = 503 levels deep: under 512, the
// smallest limit of the JSON parsers clients commonly use (Swift's
// JSONSerialization and JSONDecoder), and far under the 10 000 of the
// encoder that writes the page. A limit of its own, rather than whatever
// the decoder refuses, is what keeps an accepted event readable everywhere.
const MaxPayloadDepth = 500

// depth is the deepest nesting of arrays and objects in v, which must be
// valid JSON (the body was validated before this runs). Only brackets
// outside strings count; inside a string a backslash escapes the next byte.
func depth(v []byte) int {
	deepest, level, inString := 0, 0, false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			level++
			deepest = max(deepest, level)
		case c == '}' || c == ']':
			level--
		}
	}
	return deepest
}
