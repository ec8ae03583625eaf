package cliflags

import (
	"flag"
	"io"
	"slices"
	"testing"
)

// TestFlagsAnywhere: flags before, between and after the arguments are
// read; "--" makes the rest arguments; a bad flag is an error.
func TestFlagsAnywhere(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ns   string
		json bool
		want []string
	}{
		{[]string{"explain", "widgets", "w", "-n", "shop", "--json"}, "shop", true, []string{"explain", "widgets", "w"}},
		{[]string{"-n", "shop", "explain", "--json", "widgets", "w"}, "shop", true, []string{"explain", "widgets", "w"}},
		{[]string{"explain", "--", "-n", "w"}, "", false, []string{"explain", "-n", "w"}},
		{[]string{"explain"}, "", false, []string{"explain"}},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		ns := fs.String("n", "", "")
		asJSON := fs.Bool("json", false, "")
		got, err := Parse(fs, tc.args)
		if err != nil || !slices.Equal(got, tc.want) || *ns != tc.ns || *asJSON != tc.json {
			t.Errorf("Parse(%q) = %q, %v; -n %q -json %v; want %q, -n %q -json %v", tc.args, got, err, *ns, *asJSON, tc.want, tc.ns, tc.json)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := Parse(fs, []string{"explain", "-bogus"}); err == nil {
		t.Error("an unknown flag after an argument was accepted")
	}
}
