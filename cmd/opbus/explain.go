package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/internal/cliflags"
	"github.com/opbus/opbus/internal/explain"
)

// explainCmd runs "opbus explain".
func explainCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("opbus explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("store", "", "the FileStore directory the operator keeps its records in")
	juju := fs.String("juju-state", "", `a file ("-": standard input) holding what state-get prints for a Juju unit's opbus state key`)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	at := fs.String("now", "", "explain as of this time, RFC 3339 (default: now), for a reproducible report")
	args, err := cliflags.Parse(fs, args) // flags anywhere among the arguments
	if errors.Is(err, flag.ErrHelp) {
		return nil // -h: the flag set printed its usage
	}
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	now := time.Now()
	if *at != "" {
		t, err := time.Parse(time.RFC3339, *at)
		if err != nil {
			return fmt.Errorf("%w: -now %q: expected an RFC 3339 time such as 2026-11-30T10:00:00Z", errUsage, *at)
		}
		now = t
	}
	switch {
	case *dir != "" && *juju != "":
		return fmt.Errorf("%w: -store and -juju-state both given: expected one", errUsage)
	case *juju != "":
		var keys []opbus.Key
		switch len(args) {
		case 0:
		case 2: // a Juju name holds a slash: no namespace
			keys = []opbus.Key{{Kind: args[0], Name: args[1]}}
		default:
			return fmt.Errorf("%w: got %d arguments %q: expected none (every record) or KIND NAME, such as unit app/0", errUsage, len(args), args)
		}
		rs, err := explainJuju(*juju, stdin, keys, now)
		if err != nil {
			return err
		}
		return printReports(stdout, rs, *asJSON)
	case *dir == "":
		return fmt.Errorf("%w: -store or -juju-state is missing: expected where the records are", errUsage)
	}
	key, err := parseKey(args)
	if err != nil {
		return err
	}
	r, err := explainFileStore(ctx, *dir, key, now)
	if err != nil {
		return err
	}
	return printReport(stdout, r, *asJSON)
}

// parseKey reads KIND [NAMESPACE/]NAME.
func parseKey(args []string) (opbus.Key, error) {
	if len(args) != 2 {
		return opbus.Key{}, fmt.Errorf("%w: got %d arguments %q: expected KIND and [NAMESPACE/]NAME", errUsage, len(args), args)
	}
	key := opbus.Key{Kind: args[0], Name: args[1]}
	if ns, name, ok := strings.Cut(args[1], "/"); ok {
		key.Namespace, key.Name = ns, name
	}
	if key.Kind == "" || key.Name == "" {
		return opbus.Key{}, fmt.Errorf("%w: kind %q, name %q: expected both non-empty", errUsage, key.Kind, key.Name)
	}
	return key, nil
}

// explainFileStore explains the record of key in the FileStore at dir.
func explainFileStore(ctx context.Context, dir string, key opbus.Key, now time.Time) (*explain.Report, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("opbus explain: -store %s: not a directory (a FileStore keeps its records in one)", dir)
	}
	store, err := opbus.NewFileStore(dir)
	if err != nil {
		return nil, err
	}
	data, err := store.Load(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("opbus explain: %v: %w", key, err)
	}
	if data == nil {
		return nil, fmt.Errorf("opbus explain: %v: no record in %s: the operator has not committed anything for this object (check the kind, namespace and name)", key, dir)
	}
	r, err := explain.Read(explain.Key(key), data, now)
	if err != nil {
		return nil, fmt.Errorf("opbus explain: %w", err)
	}
	return r, nil
}

func printReport(w io.Writer, r *explain.Report, asJSON bool) error {
	if !asJSON {
		_, err := fmt.Fprint(w, r)
		return err
	}
	data, err := r.JSON()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", data)
	return err
}

// printReports prints reports one after another (text), or as a JSON
// array.
func printReports(w io.Writer, rs []*explain.Report, asJSON bool) error {
	if asJSON {
		data, err := json.MarshalIndent(rs, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", data)
		return err
	}
	for i, r := range rs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := printReport(w, r, false); err != nil {
			return err
		}
	}
	return nil
}
