package juju

import "strings"

// CleanMessage returns a status message as status-set can carry it and
// status-get gives it back: without NUL bytes (no process argument can
// hold one, so exec refuses the tool), with invalid UTF-8 replaced by
// U+FFFD (Juju's API carries UTF-8 only), without surrounding white space,
// and shortened to [MaxStatusMessage] bytes with [TruncateMessage].
// [Tools.StatusSet] and [Run] send every message through it, so a message
// read back with status-get compares equal to the one set.
func CleanMessage(s string) string {
	s = strings.ReplaceAll(s, "\x00", "")
	s = strings.ToValidUTF8(s, "\uFFFD")
	return TruncateMessage(strings.TrimSpace(s), MaxStatusMessage)
}
