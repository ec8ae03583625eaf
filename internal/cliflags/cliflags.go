// Package cliflags parses a command line whose flags may come before,
// between or after its arguments, as kubectl and most Kubernetes tools
// take them (the standard library's flag package stops at the first
// argument). "--" ends the flags: what follows is arguments.
package cliflags

import "flag"

// Parse parses args with fs, flags anywhere among the arguments, and
// returns the arguments in order.
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var out []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return out, nil
		}
		if at := len(args) - len(rest); at > 0 && args[at-1] == "--" {
			return append(out, rest...), nil // fs stopped at "--"
		}
		out = append(out, rest[0])
		args = rest[1:]
	}
}
