package juju

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Juju reads the --file input of state-set and relation-set as YAML, whose
// reader refuses any character outside YAML's printable set ("control
// characters are not allowed"): a hook that wrote one would fail, and
// fail again on every retry. encoding/json escapes the C0 controls but
// leaves U+007F, the C1 controls (U+0080 to U+009F) and the noncharacters
// U+FFFE and U+FFFF as they are, so appendYAMLString escapes those too,
// as \uXXXX, which YAML's double quotes read back as the same character.
// U+0085 (NEL) is escaped as well: it is printable in YAML, but a line
// break, which double quotes would fold into a space.

// yamlUnsafe reports whether r must be escaped in a YAML double-quoted
// string that encoding/json wrote.
func yamlUnsafe(r rune) bool {
	return (r >= 0x7f && r <= 0x9f) || r == 0xfffe || r == 0xffff
}

// appendYAMLString appends s as a JSON string that is also a YAML
// double-quoted scalar Juju reads back as s (invalid UTF-8 becomes U+FFFD,
// as encoding/json makes it).
func appendYAMLString(buf []byte, s string) []byte {
	j, _ := json.Marshal(s) // a string never fails to encode
	for i := 0; i < len(j); {
		r, n := utf8.DecodeRune(j[i:])
		if yamlUnsafe(r) {
			buf = fmt.Appendf(buf, `\u%04x`, r)
		} else {
			buf = append(buf, j[i:i+n]...)
		}
		i += n
	}
	return buf
}

// yamlSafeJSON returns j, which encoding/json wrote, with the characters
// YAML refuses or folds escaped as \uXXXX. They can only be inside its
// strings, so j means the same in JSON and reads back the same in YAML.
func yamlSafeJSON(j []byte) []byte {
	var buf []byte
	for i := 0; i < len(j); {
		r, n := utf8.DecodeRune(j[i:])
		if yamlUnsafe(r) {
			if buf == nil {
				buf = append(make([]byte, 0, len(j)+16), j[:i]...)
			}
			buf = fmt.Appendf(buf, `\u%04x`, r)
		} else if buf != nil {
			buf = append(buf, j[i:i+n]...)
		}
		i += n
	}
	if buf == nil {
		return j
	}
	return buf
}
