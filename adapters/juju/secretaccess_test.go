package juju_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/opbus/opbus/adapters/juju"
)

// TestErrSecretNotGranted: secret-get's refusal of a secret the unit may
// not read matches ErrSecretNotGranted in the words of every Juju; other
// failures do not.
func TestErrSecretNotGranted(t *testing.T) {
	tests := []struct {
		tool, stderr string
		code         int
		want         bool
	}{
		{"secret-get", "ERROR permission denied\n", 1, true},                                   // before 3.6
		{"secret-get", `ERROR "web/0" is not allowed to read this secret` + "\n", 1, true},     // 3.6 and later
		{"secret-get", `ERROR secret "secret:d0s3o8fmp25c76d5jdq0" not found` + "\n", 1, true}, // hidden
		{"secret-info-get", `ERROR secret with label "db-password" not found` + "\n", 1, true}, // hidden
		{"secret-get", `ERROR secret key "password" not found` + "\n", 1, false},               // the content lacks the key
		{"secret-get", "ERROR connection is shut down\n", 1, false},                            // the controller unreachable
		{"secret-get", "ERROR flag provided but not defined: -x\n", 2, false},                  // misuse
		{"state-get", "ERROR permission denied\n", 1, false},                                   // not a secret read
		{"secret-get", "", -1, false},                                                          // terminated
	}
	for _, tt := range tests {
		err := fmt.Errorf("reading the password: %w", &juju.ToolError{Tool: tt.tool, ExitCode: tt.code, Stderr: tt.stderr})
		if got := errors.Is(err, juju.ErrSecretNotGranted); got != tt.want {
			t.Errorf("%s %q: errors.Is(err, ErrSecretNotGranted) = %v, want %v", tt.tool, tt.stderr, got, tt.want)
		}
	}
	if errors.Is(errors.New("permission denied"), juju.ErrSecretNotGranted) {
		t.Error("an error that is not a tool's matches")
	}
}
