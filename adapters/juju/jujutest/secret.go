package jujutest

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/opbus/opbus/adapters/juju"
)

// Secret is a Juju secret the unit can see: one it (or its application)
// owns, or one another application owns and has granted to it.
//
// Juju applies what the secret tools change only when the hook exits 0,
// as state-set: the changes are staged in [Staged.Secrets] until
// [Model.Commit].
type Secret struct {
	// ID is the secret's ID, "secret:<id>".
	ID string `json:"id"`
	// Owner is juju.SecretOwnerApplication or juju.SecretOwnerUnit for a
	// secret this unit or its application owns, and empty for one it
	// observes (another application owns it and granted it access).
	Owner string `json:"owner,omitempty"`
	// Label is the owner's label, or the label the observing unit gave.
	Label string `json:"label,omitempty"`
	// Description, Rotate and Expire are the owner's metadata.
	Description string `json:"description,omitempty"`
	Rotate      string `json:"rotate,omitempty"`
	Expire      string `json:"expire,omitempty"`
	// Contents holds each revision's content, by revision number; the
	// highest is the latest.
	Contents map[int]map[string]string `json:"contents"`
	// Tracked is the revision an observer reads without --peek or
	// --refresh; 0 until it first reads the secret, which tracks the
	// latest.
	Tracked int `json:"tracked,omitempty"`
	// Grants are the relations (and units) the owner granted access to.
	Grants []SecretGrant `json:"grants,omitempty"`
	// Ungranted marks a secret the unit knows the ID of but may not read:
	// a user secret (juju add-secret) whose URI the config names but that
	// the application has not been granted (juju grant-secret). secret-get
	// fails as in Juju 3.6, `"<unit>" is not allowed to read this secret`;
	// clear it to grant the secret.
	Ungranted bool `json:"ungranted,omitempty"`
}

// SecretGrant is one secret-grant: a relation, and one unit of its remote
// application or, when Unit is empty, all of them.
type SecretGrant struct {
	Relation int    `json:"relation"`
	App      string `json:"app"`
	Unit     string `json:"unit,omitempty"`
}

// Latest returns the latest revision number, 0 when there is none.
func (s *Secret) Latest() int {
	latest := 0
	for r := range s.Contents {
		latest = max(latest, r)
	}
	return latest
}

// secrets returns the secrets as the hook sees them (staged changes
// included). The result must not be modified.
func (m *Model) secrets() []Secret {
	if m.Staged != nil && m.Staged.Secrets != nil {
		return m.Staged.Secrets
	}
	return m.Secrets
}

// stageSecrets returns a staged deep copy of the secrets to change.
func (m *Model) stageSecrets() []Secret {
	st := m.staged()
	if st.Secrets == nil {
		st.Secrets = make([]Secret, 0, len(m.Secrets))
		for _, s := range m.Secrets {
			c := s
			c.Contents = make(map[int]map[string]string, len(s.Contents))
			for r, v := range s.Contents {
				c.Contents[r] = maps.Clone(v)
			}
			c.Grants = slices.Clone(s.Grants)
			st.Secrets = append(st.Secrets, c)
		}
	}
	return st.Secrets
}

// findSecret returns the index of the secret with the given ID (with or
// without "secret:") or, when id is empty, label, in list.
func findSecret(list []Secret, id, label string) (int, *result) {
	if id != "" {
		id = "secret:" + strings.TrimPrefix(id, "secret:")
		for i := range list {
			if list[i].ID == id {
				return i, nil
			}
		}
		return -1, fail("secret %q not found", id)
	}
	for i := range list {
		if list[i].Label == label {
			return i, nil
		}
	}
	return -1, fail("secret with label %q not found", label)
}

// manage fails unless the unit may change s: it owns it, or its
// application does and the unit leads it.
func (m *Model) manage(s *Secret) *result {
	switch {
	case s.Owner == juju.SecretOwnerUnit:
		return nil
	case s.Owner == juju.SecretOwnerApplication && m.Leader:
		return nil
	case s.Owner == juju.SecretOwnerApplication:
		return fail("permission denied: secret %q is owned by the application and this unit is not the leader", s.ID)
	}
	return fail("permission denied: secret %q is not owned by this unit or its application", s.ID)
}

// fakeSecretKey is Juju's rule for a secret content key.
var fakeSecretKey = regexp.MustCompile(`^[a-z](?:-?[a-z0-9]){2,}$`)

// secretContent reads the content of secret-add and secret-set as Juju
// does: key=value arguments (key#base64=<base64>, key#file=<path>), then
// the --file file (JSON or YAML, keys with #base64 allowed) over them.
func secretContent(c *call, args []string) (map[string]string, *result) {
	raw := map[string]string{}
	for _, a := range args {
		k, v, found := strings.Cut(a, "=")
		if !found || k == "" {
			return nil, usage("key value %q not valid", a)
		}
		if key, isFile := strings.CutSuffix(k, "#file"); isFile {
			data, err := os.ReadFile(v)
			if err != nil {
				return nil, usage("reading content for secret key %q: %v", key, err)
			}
			k, v = key, string(data)
		}
		raw[k] = v
	}
	if path := c.values["file"]; path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, usage("%v", err)
		}
		// Juju tries JSON first, then YAML.
		var file map[string]string
		if json.Unmarshal(data, &file) != nil {
			if file, err = parseSettings(data); err != nil {
				return nil, usage("cannot parse secret content: %v", err)
			}
		}
		maps.Copy(raw, file)
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		key, isB64 := strings.CutSuffix(k, "#base64")
		if !fakeSecretKey.MatchString(key) {
			return nil, usage("key %q not valid", key)
		}
		if isB64 {
			d, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				return nil, usage("value of key %q is not valid base64", key)
			}
			v = string(d)
		}
		out[key] = v
	}
	return out, nil
}

// upsertFlags are the flags of secret-add and secret-set.
var upsertFlags = flagSet{values: []string{"expire", "rotate", "description", "label", "file", "owner"}}

// secretMeta checks and applies the metadata flags to s.
func secretMeta(c *call, s *Secret) *result {
	if v, given := c.values["expire"]; given {
		_, e1 := time.Parse(time.RFC3339, v)
		_, e2 := time.Parse("2006-01-02T15:04:05", v)
		d, e3 := time.ParseDuration(v)
		if e1 != nil && e2 != nil && (e3 != nil || d <= 0) {
			return usage("expire time or duration %q not valid", v)
		}
		s.Expire = v
	}
	if v, given := c.values["rotate"]; given {
		if !slices.Contains(juju.SecretRotatePolicies, v) {
			return usage("rotate policy %q not valid", v)
		}
		s.Rotate = v
	}
	if v, given := c.values["description"]; given {
		s.Description = v
	}
	if v, given := c.values["label"]; given {
		s.Label = v
	}
	return nil
}

// labelTaken fails when another secret of list has label.
func labelTaken(list []Secret, label, id string) *result {
	for _, s := range list {
		if label != "" && s.Label == label && s.ID != id {
			return fail("secret with label %q already exists", label)
		}
	}
	return nil
}

// secret-add [--owner application|unit] [--label …] [--description …]
// [--expire …] [--rotate …] [--file <path>] [key[#base64|#file]=value …]
func (m *Model) secretAdd(c *call) *result {
	if bad := c.parse(upsertFlags); bad != nil {
		return bad
	}
	if len(c.pos) == 0 && c.values["file"] == "" {
		return usage("missing secret value or filename")
	}
	owner := cmp.Or(c.values["owner"], juju.SecretOwnerApplication)
	if owner != juju.SecretOwnerApplication && owner != juju.SecretOwnerUnit {
		return usage("secret owner %q not valid", owner)
	}
	content, bad := secretContent(c, c.pos)
	if bad != nil {
		return bad
	}
	if len(content) == 0 {
		return fail("empty secret value not valid")
	}
	s := Secret{Owner: owner, Contents: map[int]map[string]string{1: content}}
	if bad := m.manage(&s); bad != nil {
		return bad
	}
	if bad := secretMeta(c, &s); bad != nil {
		return bad
	}
	list := m.stageSecrets()
	if bad := labelTaken(list, s.Label, ""); bad != nil {
		return bad
	}
	s.ID = fmt.Sprintf("secret:cs%018d", len(list)+1)
	for slices.ContainsFunc(list, func(o Secret) bool { return o.ID == s.ID }) {
		s.ID += "x"
	}
	m.Staged.Secrets = append(list, s)
	return &result{out: []byte(s.ID + "\n")}
}

// secret-set <ID> [--label …] [--description …] [--expire …] [--rotate …]
// [--file <path>] [key[#base64|#file]=value …]
func (m *Model) secretSet(c *call) *result {
	if bad := c.parse(upsertFlags); bad != nil {
		return bad
	}
	if len(c.pos) == 0 {
		return usage("missing secret URI")
	}
	i, bad := findSecret(m.secrets(), c.pos[0], "")
	if bad != nil {
		return bad
	}
	if bad := m.manage(&m.secrets()[i]); bad != nil {
		return bad
	}
	var content map[string]string
	if len(c.pos) > 1 || c.values["file"] != "" {
		if content, bad = secretContent(c, c.pos[1:]); bad != nil {
			return bad
		}
	}
	list := m.stageSecrets()
	s := &list[i]
	if bad := secretMeta(c, s); bad != nil {
		return bad
	}
	if bad := labelTaken(list, s.Label, s.ID); bad != nil {
		return bad
	}
	if len(content) > 0 {
		s.Contents[s.Latest()+1] = content
	}
	return nil
}

// secret-get [<ID>] [key[#base64]] [--label …] [--peek|--refresh]
// [--format yaml|json]
func (m *Model) secretGet(c *call) *result {
	if bad := c.parse(flagSet{values: []string{"label", "format"}, bools: []string{"peek", "refresh"}}); bad != nil {
		return bad
	}
	id, key := "", ""
	if len(c.pos) > 0 {
		id = c.pos[0]
		if !strings.HasPrefix(id, "secret:") {
			return usage("secret URI %q not valid", id)
		}
		if len(c.pos) > 1 {
			key = c.pos[1]
		}
		if bad := noMore(c.pos[min(len(c.pos), 2):]); bad != nil {
			return bad
		}
	}
	label := c.values["label"]
	switch {
	case id == "" && label == "":
		return usage("require either a secret URI or label")
	case c.bools["peek"] && c.bools["refresh"]:
		return usage("specify one of --peek or --refresh but not both")
	}
	if f := c.values["format"]; f != "" && f != "yaml" && f != "json" {
		return usage("invalid value %q for option --format: unknown format %q", f, f)
	}
	i, bad := findSecret(m.secrets(), id, label)
	if bad != nil {
		return bad
	}
	s := m.secrets()[i]
	if s.Ungranted {
		return fail("%q is not allowed to read this secret", m.Unit)
	}
	rev := s.Latest()
	if s.Owner == "" {
		tracked := s.Tracked
		switch {
		case c.bools["peek"]:
		case c.bools["refresh"] || tracked == 0:
			tracked = rev
		default:
			rev = tracked
		}
		if tracked != s.Tracked || (id != "" && label != "" && label != s.Label) {
			list := m.stageSecrets()
			list[i].Tracked = tracked
			if id != "" && label != "" {
				list[i].Label = label
			}
		}
	} else if id != "" && label != "" && label != s.Label {
		if bad := m.manage(&s); bad != nil {
			return bad
		}
		m.stageSecrets()[i].Label = label
	}
	content := s.Contents[rev]
	if key == "" {
		return output(c, nonNil(content))
	}
	k, b64 := strings.CutSuffix(key, "#base64")
	v, found := content[k]
	if !found {
		return fail("secret key %q not found", k)
	}
	if b64 {
		v = base64.StdEncoding.EncodeToString([]byte(v))
	}
	return output(c, v)
}

// secret-info-get [<ID>] [--label …] [--format yaml|json]
func (m *Model) secretInfoGet(c *call) *result {
	if bad := c.parse(withFormat(flagSet{values: []string{"label"}})); bad != nil {
		return bad
	}
	id, label := "", c.values["label"]
	if len(c.pos) > 0 {
		id = c.pos[0]
		if bad := noMore(c.pos[1:]); bad != nil {
			return bad
		}
	}
	switch {
	case id == "" && label == "":
		return usage("require either a secret URI or label")
	case id != "" && label != "":
		return usage("specify either a secret URI or label but not both")
	}
	i, bad := findSecret(m.owned(), id, label)
	if bad != nil {
		return bad
	}
	s := m.owned()[i]
	info := map[string]any{"revision": s.Latest(), "label": s.Label, "owner": s.Owner}
	if s.Description != "" {
		info["description"] = s.Description
	}
	if s.Rotate != "" {
		info["rotation"] = s.Rotate
	}
	var access []map[string]any
	for _, g := range s.Grants {
		target := "application-" + g.App
		if g.Unit != "" {
			target = "unit-" + strings.ReplaceAll(g.Unit, "/", "-")
		}
		access = append(access, map[string]any{"target": target, "scope": "relation-" + strconv.Itoa(g.Relation), "role": "view"})
	}
	if access != nil {
		info["access"] = access
	}
	return output(c, map[string]any{strings.TrimPrefix(s.ID, "secret:"): info})
}

// owned returns the secrets the unit may manage.
func (m *Model) owned() []Secret {
	var out []Secret
	for _, s := range m.secrets() {
		if m.manage(&s) == nil {
			out = append(out, s)
		}
	}
	return out
}

// secret-ids [--format …]
func (m *Model) secretIDs(c *call) *result {
	if bad := c.parse(withFormat(flagSet{})); bad != nil {
		return bad
	}
	if bad := noMore(c.pos); bad != nil {
		return bad
	}
	ids := []string{}
	for _, s := range m.owned() {
		ids = append(ids, strings.TrimPrefix(s.ID, "secret:"))
	}
	slices.Sort(ids)
	return output(c, ids)
}

// secret-grant <ID> -r <relation> [--unit <unit>]
func (m *Model) secretGrant(c *call) *result {
	if bad := c.parse(relationFlags([]string{"unit"}, nil)); bad != nil {
		return bad
	}
	if len(c.pos) == 0 {
		return usage("missing secret URI")
	}
	if bad := noMore(c.pos[1:]); bad != nil {
		return bad
	}
	r, bad := m.relation(c)
	if bad != nil {
		return bad
	}
	unit := c.values["unit"]
	if unit != "" {
		if app, _, _ := strings.Cut(unit, "/"); app != r.RemoteApp {
			return usage("cannot specify unit %q in relation to application %q", unit, r.RemoteApp)
		}
	}
	i, bad := findSecret(m.secrets(), c.pos[0], "")
	if bad != nil {
		return bad
	}
	if bad := m.manage(&m.secrets()[i]); bad != nil {
		return bad
	}
	g := SecretGrant{Relation: r.ID, App: r.RemoteApp, Unit: unit}
	list := m.stageSecrets()
	if !slices.Contains(list[i].Grants, g) {
		list[i].Grants = append(list[i].Grants, g)
	}
	return nil
}

// secret-revoke <ID> [-r <relation>] [--app|--application <app>]
// [--unit <unit>]
func (m *Model) secretRevoke(c *call) *result {
	fs := relationFlags([]string{"app", "unit"}, nil)
	fs.alias["application"] = "app"
	if bad := c.parse(fs); bad != nil {
		return bad
	}
	if len(c.pos) == 0 {
		return usage("missing secret URI")
	}
	if bad := noMore(c.pos[1:]); bad != nil {
		return bad
	}
	app, unit := c.values["app"], c.values["unit"]
	if app != "" && unit != "" {
		return usage("specify only one of application or unit")
	}
	if _, given := c.values["relation"]; given || m.HookRelation != nil {
		if app != "" {
			return usage("do not specify both relation and app")
		}
		r, bad := m.relation(c)
		if bad != nil {
			return bad
		}
		app = r.RemoteApp
	}
	if app == "" && unit == "" {
		return usage("missing relation or application or unit")
	}
	i, bad := findSecret(m.secrets(), c.pos[0], "")
	if bad != nil {
		return bad
	}
	if bad := m.manage(&m.secrets()[i]); bad != nil {
		return bad
	}
	list := m.stageSecrets()
	list[i].Grants = slices.DeleteFunc(list[i].Grants, func(g SecretGrant) bool {
		if unit != "" {
			return g.Unit == unit
		}
		return g.App == app
	})
	return nil
}

// secret-remove <ID> [--revision <n>]
func (m *Model) secretRemove(c *call) *result {
	if bad := c.parse(flagSet{values: []string{"revision"}}); bad != nil {
		return bad
	}
	if len(c.pos) == 0 {
		return usage("missing secret URI")
	}
	if bad := noMore(c.pos[1:]); bad != nil {
		return bad
	}
	rev := 0
	if v, given := c.values["revision"]; given {
		n, err := strconv.Atoi(v)
		if err != nil {
			return usage("invalid value %q for option --revision", v)
		}
		rev = n
	}
	i, bad := findSecret(m.secrets(), c.pos[0], "")
	if bad != nil {
		return bad
	}
	if bad := m.manage(&m.secrets()[i]); bad != nil {
		return bad
	}
	list := m.stageSecrets()
	if rev <= 0 {
		m.Staged.Secrets = slices.Delete(list, i, i+1)
		return nil
	}
	if _, found := list[i].Contents[rev]; !found {
		return fail("secret revision %d not found", rev)
	}
	delete(list[i].Contents, rev)
	return nil
}
