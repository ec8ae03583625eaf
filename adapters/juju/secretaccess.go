package juju

import (
	"errors"
	"strings"
)

// ErrSecretNotGranted matches, with [errors.Is], secret-get's and
// secret-info-get's refusal of a secret the unit may not read: one not
// granted to its application (a user secret before `juju grant-secret`),
// or one whose existence Juju hides. Juju words it differently across
// versions: "permission denied" before 3.6, `"<unit>" is not allowed to
// read this secret` from 3.6, and `secret "<id>" not found` where it hides
// the secret. Any other failure of those tools (the controller
// unreachable, a key the secret lacks) does not match: a charm shows the
// first as Blocked and fails the hook on the others, which Juju retries.
var ErrSecretNotGranted = errors.New("juju: secret not granted")

// Is reports whether target is [ErrSecretNotGranted] and e is a refusal of
// a secret the unit may not read.
func (e *ToolError) Is(target error) bool {
	return target == ErrSecretNotGranted && secretRefused(e)
}

// secretRefused reports whether e is secret-get's or secret-info-get's
// refusal of a secret the unit may not read, in any Juju's words.
func secretRefused(e *ToolError) bool {
	if e.Tool != "secret-get" && e.Tool != "secret-info-get" || e.ExitCode <= 0 {
		return false
	}
	msg := strings.TrimSpace(e.Stderr)
	switch {
	case strings.Contains(msg, "is not allowed to read this secret"),
		strings.Contains(msg, "permission denied"):
		return true
	case strings.Contains(msg, "secret key"):
		return false // a key the secret's content lacks
	}
	return strings.Contains(msg, "secret") && strings.Contains(msg, "not found")
}
