package juju

import (
	"errors"
	"strings"
)

// deadRelation reports whether err is Juju's answer about a relation that
// is dead ("relation not found"), which relation-ids may still list during
// its teardown or after remove-relation --force. The document reads such a
// relation as one with no remote units and no data, as ops does.
func deadRelation(err error) bool {
	var te *ToolError
	return errors.As(err, &te) && strings.Contains(te.Stderr, "relation not found")
}

// orEmpty returns v and nil, or the zero value and nil when err says the
// relation is dead, or err.
func orEmpty[T any](v T, err error) (T, error) {
	if err != nil && deadRelation(err) {
		var zero T
		return zero, nil
	}
	return v, err
}
