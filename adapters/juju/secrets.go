package juju

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SecretContent is the content of a Juju secret: values by key. Keys are
// what Juju accepts: lower-case letters, digits and single hyphens,
// starting with a letter, at least three characters ([ValidSecretKey]).
//
// The values never reach a log line: String, GoString and LogValue name
// the keys only, and MarshalJSON fails, so that content put by mistake in
// a document, a record or a JSON log line is an error rather than a leak.
// Read the values by indexing the map.
//
// secret-get prints the content as JSON, which carries UTF-8 only: a value
// that is not valid UTF-8 reads back with U+FFFD in place of the bad
// bytes, in Juju as in the fake, so store binary content base64-encoded.
type SecretContent map[string]string

// String implements [fmt.Stringer]: the keys, never the values.
func (c SecretContent) String() string {
	return "juju.SecretContent{" + strings.Join(slices.Sorted(maps.Keys(c)), ", ") + ": redacted}"
}

// GoString implements [fmt.GoStringer], for %#v: as String.
func (c SecretContent) GoString() string { return c.String() }

// LogValue implements [slog.LogValuer]: the keys, never the values.
func (c SecretContent) LogValue() slog.Value { return slog.StringValue(c.String()) }

// MarshalJSON implements [json.Marshaler] by failing: secret content is
// not to be encoded anywhere Juju does not keep it.
func (c SecretContent) MarshalJSON() ([]byte, error) {
	return nil, errors.New("juju: secret content does not encode to JSON (it would leak into logs, records or state)")
}

// secretKey returns Juju's rule for a secret content key. It is compiled
// when first used, not when every hook's process starts.
var secretKey = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z](?:-?[a-z0-9]){2,}$`)
})

// ValidSecretKey reports an error when key cannot be a key of secret
// content: lower-case letters, digits and single hyphens, starting with a
// letter and ending with a letter or digit, at least three characters.
func ValidSecretKey(key string) error {
	if !secretKey().MatchString(key) {
		return fmt.Errorf("juju: invalid secret key %q: want lower-case letters, digits and single hyphens, starting with a letter, at least 3 characters", key)
	}
	return nil
}

// The owners a secret can have (secret-add --owner).
const (
	// SecretOwnerApplication: the application owns the secret and only
	// its leader manages it. The default.
	SecretOwnerApplication = "application"
	// SecretOwnerUnit: the unit that made the secret owns it.
	SecretOwnerUnit = "unit"
)

// SecretRotatePolicies are the rotation policies Juju accepts (--rotate).
var SecretRotatePolicies = []string{"never", "hourly", "daily", "weekly", "monthly", "quarterly", "yearly"}

// SecretOptions are the metadata of a secret set with secret-add or
// secret-set; empty fields are not sent.
type SecretOptions struct {
	// Owner is SecretOwnerApplication or SecretOwnerUnit (secret-add only;
	// empty means the application).
	Owner string
	// Label names the secret in hooks (JUJU_SECRET_LABEL) and in
	// secret-get --label.
	Label string
	// Description describes the secret.
	Description string
	// Expire is when the secret's revision expires: an RFC 3339 time
	// ("2025-01-01T06:06:06Z", or without the zone, UTC) or a positive Go
	// duration ("24h").
	Expire string
	// Rotate is one of [SecretRotatePolicies].
	Rotate string
}

// args returns the options' flags, checked as Juju checks them.
func (o *SecretOptions) args(tool string) ([]string, error) {
	if o == nil {
		return nil, nil
	}
	var args []string
	switch o.Owner {
	case "":
	case SecretOwnerApplication, SecretOwnerUnit:
		if tool != "secret-add" {
			return nil, fmt.Errorf("juju: %s: the owner of a secret is set by secret-add only", tool)
		}
		args = append(args, "--owner", o.Owner)
	default:
		return nil, fmt.Errorf("juju: %s: invalid owner %q (want %q or %q)", tool, o.Owner, SecretOwnerApplication, SecretOwnerUnit)
	}
	if o.Expire != "" {
		if err := checkExpire(o.Expire); err != nil {
			return nil, fmt.Errorf("juju: %s: %w", tool, err)
		}
		args = append(args, "--expire", o.Expire)
	}
	if o.Rotate != "" {
		if !slices.Contains(SecretRotatePolicies, o.Rotate) {
			return nil, fmt.Errorf("juju: %s: invalid rotate policy %q (want one of %s)", tool, o.Rotate, strings.Join(SecretRotatePolicies, ", "))
		}
		args = append(args, "--rotate", o.Rotate)
	}
	if o.Label != "" {
		args = append(args, "--label", o.Label)
	}
	if o.Description != "" {
		args = append(args, "--description", o.Description)
	}
	return args, nil
}

// checkExpire checks an expiry as secret-add reads it.
func checkExpire(s string) error {
	if _, err := time.Parse(time.RFC3339, s); err == nil {
		return nil
	}
	if _, err := time.Parse("2006-01-02T15:04:05", s); err == nil {
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return fmt.Errorf("invalid expiry %q (want an RFC 3339 time or a positive duration such as 24h)", s)
	}
	return nil
}

// checkSecretID rejects an ID no secret tool accepts before running one.
func checkSecretID(tool, id string) error {
	if !strings.HasPrefix(id, "secret:") || len(id) == len("secret:") {
		return fmt.Errorf("juju: %s: invalid secret ID %q (want secret:<id>, as secret-add prints it)", tool, id)
	}
	return nil
}

// withContentFile writes content to a file only the charm's user can read
// (keys with the #base64 suffix and their values in base64, so any bytes
// survive), calls fn with its path and removes it: the content goes to
// secret-add and secret-set with --file, never on their command line,
// which other processes can read and which [ToolError] keeps.
func withContentFile(tool string, content SecretContent, fn func(path string) error) error {
	keys := slices.Sorted(maps.Keys(content))
	if len(keys) == 0 {
		return fmt.Errorf("juju: %s: empty secret content", tool)
	}
	enc := make(map[string]string, len(keys))
	for _, k := range keys {
		if err := ValidSecretKey(k); err != nil {
			return fmt.Errorf("juju: %s: %w", tool, err)
		}
		enc[k+"#base64"] = base64.StdEncoding.EncodeToString([]byte(content[k]))
	}
	data, err := json.Marshal(enc)
	if err != nil {
		return fmt.Errorf("juju: %s: encoding the content: %w", tool, err)
	}
	dir, err := os.MkdirTemp("", "opbus-secret-")
	if err != nil {
		return fmt.Errorf("juju: %s: %w", tool, err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "content.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("juju: %s: %w", tool, err)
	}
	return fn(path)
}

// SecretAdd makes a secret with content and returns its ID ("secret:…"):
// secret-add [options] --file <file>. The content goes through a file
// that is removed afterwards, never on the command line. Juju makes the
// secret when the hook succeeds; a failed hook discards it.
func (t Tools) SecretAdd(ctx context.Context, content SecretContent, opts *SecretOptions) (string, error) {
	args, err := opts.args("secret-add")
	if err != nil {
		return "", err
	}
	var out []byte
	err = withContentFile("secret-add", content, func(path string) error {
		var err error
		out, err = t.run(ctx, "secret-add", append(args, "--file", path), nil)
		return err
	})
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(out))
	if err := checkSecretID("secret-add", id); err != nil {
		return "", err
	}
	return id, nil
}

// SecretSet makes a new revision of a secret the unit (or, on the leader,
// its application) owns, with content, and sets the metadata opts gives:
// secret-set [options] [--file <file>] -- <ID>. Nil content changes only
// the metadata.
func (t Tools) SecretSet(ctx context.Context, id string, content SecretContent, opts *SecretOptions) error {
	if err := checkSecretID("secret-set", id); err != nil {
		return err
	}
	args, err := opts.args("secret-set")
	if err != nil {
		return err
	}
	if content == nil {
		if len(args) == 0 {
			return fmt.Errorf("juju: secret-set %s: neither content nor metadata to set", id)
		}
		_, err := t.run(ctx, "secret-set", append(args, "--", id), nil)
		return err
	}
	return withContentFile("secret-set", content, func(path string) error {
		_, err := t.run(ctx, "secret-set", append(args, "--file", path, "--", id), nil)
		return err
	})
}

// SecretGetOptions choose which secret and revision secret-get reads.
type SecretGetOptions struct {
	// Label identifies the secret when the ID is empty; with an ID, it
	// sets the label this unit knows the secret by.
	Label string
	// Peek reads the latest revision this time only; Refresh reads it and
	// keeps reading it. Without either, a unit that observes a secret
	// keeps reading the revision it first read. At most one may be set.
	Peek, Refresh bool
}

// SecretGet reads a secret's content: secret-get --format=json
// [--label <label>] [--peek|--refresh] [-- <ID>]. id may be empty when
// opts names a label. The content is returned as [SecretContent], which
// never prints its values.
func (t Tools) SecretGet(ctx context.Context, id string, opts *SecretGetOptions) (SecretContent, error) {
	var o SecretGetOptions
	if opts != nil {
		o = *opts
	}
	args := []string{"--format=json"}
	switch {
	case o.Peek && o.Refresh:
		return nil, errors.New("juju: secret-get: Peek and Refresh are exclusive")
	case o.Peek:
		args = append(args, "--peek")
	case o.Refresh:
		args = append(args, "--refresh")
	}
	if o.Label != "" {
		args = append(args, "--label", o.Label)
	}
	if id != "" {
		if err := checkSecretID("secret-get", id); err != nil {
			return nil, err
		}
		args = append(args, "--", id)
	} else if o.Label == "" {
		return nil, errors.New("juju: secret-get: give a secret ID or a label")
	}
	out, err := t.run(ctx, "secret-get", args, nil)
	if err != nil {
		return nil, err
	}
	var c map[string]string
	if json.Unmarshal(out, &c) != nil || c == nil {
		// The decoder's message could quote the content: leave it out.
		return nil, errors.New("juju: secret-get: the output is not a JSON object of strings")
	}
	return SecretContent(c), nil
}

// SecretInfo is a secret's metadata as secret-info-get prints it, for a
// secret the unit (or, on the leader, its application) owns.
type SecretInfo struct {
	// ID is the secret's ID as secret-info-get names it.
	ID string `json:"-"`
	// Revision is the latest revision.
	Revision int `json:"revision"`
	// Label, Owner ("application" or "unit") and Description are the
	// secret's.
	Label       string `json:"label"`
	Owner       string `json:"owner"`
	Description string `json:"description,omitempty"`
	// Rotation is the rotate policy; Expiry and Rotates are the latest
	// revision's expiry and the next rotation, when set.
	Rotation string     `json:"rotation,omitempty"`
	Expiry   *time.Time `json:"expiry,omitempty"`
	Rotates  *time.Time `json:"rotates,omitempty"`
	// Access lists the grants.
	Access []SecretAccess `json:"access,omitempty"`
}

// SecretAccess is one grant of a secret.
type SecretAccess struct {
	Target string `json:"target"`
	Scope  string `json:"scope"`
	Role   string `json:"role"`
}

// SecretInfoGet reads the metadata of a secret the unit owns, by ID, or by
// label when id is empty: secret-info-get --format=json (-- <ID> |
// --label <label>).
func (t Tools) SecretInfoGet(ctx context.Context, id, label string) (SecretInfo, error) {
	args := []string{"--format=json"}
	switch {
	case id != "" && label != "":
		return SecretInfo{}, errors.New("juju: secret-info-get: give a secret ID or a label, not both")
	case id != "":
		if err := checkSecretID("secret-info-get", id); err != nil {
			return SecretInfo{}, err
		}
		args = append(args, "--", id)
	case label != "":
		args = append(args, "--label", label)
	default:
		return SecretInfo{}, errors.New("juju: secret-info-get: give a secret ID or a label")
	}
	var out map[string]SecretInfo
	if err := t.runJSON(ctx, &out, "secret-info-get", args...); err != nil {
		return SecretInfo{}, err
	}
	if len(out) != 1 {
		return SecretInfo{}, fmt.Errorf("juju: secret-info-get: want one secret in the output, got %d", len(out))
	}
	for k, info := range out {
		info.ID = k
		if !strings.HasPrefix(k, "secret:") {
			info.ID = "secret:" + k
		}
		return info, nil
	}
	panic("unreachable")
}

// SecretIDs lists the IDs of the secrets the unit (or its application)
// owns, sorted, each as "secret:<id>": secret-ids --format=json.
func (t Tools) SecretIDs(ctx context.Context) ([]string, error) {
	var ids []string
	if err := t.runJSON(ctx, &ids, "secret-ids", "--format=json"); err != nil {
		return nil, err
	}
	for i, id := range ids {
		if !strings.HasPrefix(id, "secret:") {
			ids[i] = "secret:" + id
		}
	}
	slices.Sort(ids)
	if ids == nil {
		ids = []string{}
	}
	return ids, nil
}

// SecretGrant lets the remote application of a relation read a secret,
// or only one of its units when unit is not empty:
// secret-grant -r <relation> [--unit <unit>] -- <ID>.
func (t Tools) SecretGrant(ctx context.Context, id string, relation int, unit string) error {
	if err := checkSecretID("secret-grant", id); err != nil {
		return err
	}
	args := []string{"-r", strconv.Itoa(relation)}
	if unit != "" {
		args = append(args, "--unit", unit)
	}
	_, err := t.run(ctx, "secret-grant", append(args, "--", id), nil)
	return err
}

// SecretRevokeFrom names whose access secret-revoke takes away: the
// remote application of a relation, an application or a unit. Exactly
// one of Relation and App may be set; Unit narrows Relation to one unit or
// stands alone.
type SecretRevokeFrom struct {
	// Relation is a relation id; nil means none.
	Relation *int
	// App and Unit name an application and a unit.
	App, Unit string
}

// SecretRevoke takes away access to a secret:
// secret-revoke [-r <relation>] [--app <app>] [--unit <unit>] -- <ID>.
//
// In a relation hook Juju takes -r to be the hook's relation unless it is
// given, and refuses --app beside it. So there, with the Tools of
// [FromContext], App is sent as -r of the hook's relation when it names
// the hook's remote application (which revokes the same grant), and is an
// error naming the hook's relation otherwise: revoke from another
// application with the Relation of a relation with it.
func (t Tools) SecretRevoke(ctx context.Context, id string, from SecretRevokeFrom) error {
	if err := checkSecretID("secret-revoke", id); err != nil {
		return err
	}
	var args []string
	switch {
	case from.Relation != nil && from.App != "":
		return errors.New("juju: secret-revoke: give a relation or an application, not both")
	case from.App != "" && from.Unit != "":
		return errors.New("juju: secret-revoke: give an application or a unit, not both")
	case from.Relation == nil && from.App == "" && from.Unit == "":
		return errors.New("juju: secret-revoke: give a relation, an application or a unit")
	}
	if h := t.hook; from.App != "" && h != nil && h.Relation != nil {
		if from.App != h.RemoteApp {
			return fmt.Errorf("juju: secret-revoke --app %q in relation hook %s: Juju takes -r to be the hook's relation %s (application %q) and refuses --app beside it; give the Relation of a relation with %q", from.App, h.Name, h.Relation, h.RemoteApp, from.App)
		}
		rel := h.Relation.ID
		from.Relation, from.App = &rel, ""
	}
	if from.Relation != nil {
		args = append(args, "-r", strconv.Itoa(*from.Relation))
	}
	if from.App != "" {
		args = append(args, "--app", from.App)
	}
	if from.Unit != "" {
		args = append(args, "--unit", from.Unit)
	}
	_, err := t.run(ctx, "secret-revoke", append(args, "--", id), nil)
	return err
}

// SecretRemove removes a secret the unit owns, or only one revision of it
// when revision > 0: secret-remove [--revision <n>] -- <ID>. Charms remove
// revisions no one tracks any more in secret-remove hooks
// (JUJU_SECRET_REVISION).
func (t Tools) SecretRemove(ctx context.Context, id string, revision int) error {
	if err := checkSecretID("secret-remove", id); err != nil {
		return err
	}
	var args []string
	if revision > 0 {
		args = append(args, "--revision", strconv.Itoa(revision))
	}
	_, err := t.run(ctx, "secret-remove", append(args, "--", id), nil)
	return err
}
