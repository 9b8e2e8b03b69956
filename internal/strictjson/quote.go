package strictjson

import "unicode/utf8"

// AppendString appends src quoted as encoding/json quotes a string with
// HTML escaping off (as pi's JSON.stringify does): ", \ and control bytes
// escaped (\b \f \n \r \t short), invalid UTF-8 as \ufffd, U+2028 and
// U+2029 escaped, everything else as it is. The hand-written encoders of
// the wire, decidedBy, the review log and the child's output all quote
// with it, so they agree byte for byte with encoding/json and each other.
func AppendString[S string | []byte](dst []byte, src S) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(src); {
		// The bytes written as they are, found eight at a time.
		if i = TextRun(src, i); i == len(src) {
			break
		}
		if b := src[i]; b < utf8.RuneSelf {
			dst = append(dst, src[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := decodeRune(src[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, src[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, src[start:]...)
	return append(dst, '"')
}

// decodeRune decodes the rune s starts with, copying at most
// utf8.UTFMax bytes when s is a []byte.
func decodeRune[S string | []byte](s S) (rune, int) {
	n := min(len(s), utf8.UTFMax)
	return utf8.DecodeRuneInString(string(s[:n]))
}
