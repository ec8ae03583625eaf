package juju

import (
	"fmt"
	"strings"

	"github.com/opbus/opbus/internal/nearest"
)

// didYouMean returns "did you mean <prefix><known>? " naming the known
// name nearest to name, if one is near enough to be a misspelling, or "".
func didYouMean(prefix, name string, known []string) string {
	near := nearest.Names(name, known, 1)
	if len(near) == 0 || nearest.Distance(strings.ToLower(name), strings.ToLower(near[0])) > max(2, len(name)/3) {
		return ""
	}
	return fmt.Sprintf("did you mean %s%s? ", prefix, near[0])
}
