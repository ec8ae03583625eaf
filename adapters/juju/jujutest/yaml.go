package jujutest

import (
	"fmt"
	"strings"
)

// checkYAMLInput refuses what the YAML reader Juju uses for state-set and
// relation-set --file refuses before parsing: any character outside YAML's
// printable set (#x9, #xA, #xD, #x20-#x7E, #x85, #xA0-#xD7FF,
// #xE000-#xFFFD, #x10000-#x10FFFF), such as U+007F, the C1 controls and
// U+FFFE, with the message Juju prints. In Juju the hook then fails, and
// fails again on every retry.
//
// flow is input in the JSON form charms write: there a raw line break
// other than "\n" (U+0085, U+2028, U+2029) inside a string is refused too,
// since YAML would fold it into a space and Juju would store something
// other than what was written.
func checkYAMLInput(s string, flow bool) error {
	for i, r := range s {
		switch {
		case r == 0x9 || r == 0xa || r == 0xd:
		case r >= 0x20 && r <= 0x7e:
		case r == 0x85:
		case r >= 0xa0 && r <= 0xd7ff:
		case r >= 0xe000 && r <= 0xfffd:
		case r >= 0x10000 && r <= 0x10ffff:
		default:
			return fmt.Errorf("yaml: control characters are not allowed (U+%04X at byte %d)", r, i)
		}
	}
	if flow {
		if i := strings.IndexAny(s, "\u0085\u2028\u2029"); i >= 0 {
			return fmt.Errorf("yaml: a raw line break at byte %d inside a double-quoted string reads as a space: write it escaped", i)
		}
	}
	return nil
}
