package jujutest_test

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// secretModel is a leader with one relation, one secret its application
// owns (two revisions) and one it observes.
func secretModel() *jujutest.Model {
	return &jujutest.Model{
		Unit: "web/0", Leader: true,
		Relations: []jujutest.Relation{{ID: 2, Endpoint: "db", RemoteApp: "pg"}},
		Secrets: []jujutest.Secret{
			{ID: "secret:owned", Owner: "application", Label: "mine", Contents: map[int]map[string]string{1: {"pass": "a"}, 2: {"pass": "b"}}},
			{ID: "secret:theirs", Contents: map[int]map[string]string{3: {"token": "t"}}},
		},
	}
}

// TestSecretToolsSyntax checks the fake secret tools against Juju's
// argument syntax and errors, exit code 2 for bad arguments and 1 for a
// refused operation.
func TestSecretToolsSyntax(t *testing.T) {
	nonLeader := func() *jujutest.Model { m := secretModel(); m.Leader = false; return m }
	ungranted := func() *jujutest.Model { m := secretModel(); m.Secrets[1].Ungranted = true; return m }
	b64 := base64.StdEncoding.EncodeToString([]byte("raw\x00"))
	tests := []struct {
		name   string
		model  func() *jujutest.Model
		tool   string
		args   []string
		code   int
		out    string // exact stdout when code is 0 and out is not empty
		stderr string // substring
	}{
		{"add no content", secretModel, "secret-add", nil, 2, "", "missing secret value or filename"},
		{"add bad key", secretModel, "secret-add", []string{"Pass=x"}, 2, "", `key "Pass" not valid`},
		{"add short key", secretModel, "secret-add", []string{"ab=x"}, 2, "", `key "ab" not valid`},
		{"add bad owner", secretModel, "secret-add", []string{"--owner", "model", "key=x"}, 2, "", `secret owner "model" not valid`},
		{"add bad rotate", secretModel, "secret-add", []string{"--rotate", "often", "key=x"}, 2, "", `rotate policy "often" not valid`},
		{"add bad expire", secretModel, "secret-add", []string{"--expire", "soon", "key=x"}, 2, "", `expire time or duration "soon" not valid`},
		{"add bad base64", secretModel, "secret-add", []string{"key#base64=!!"}, 2, "", "not valid base64"},
		{"add app-owned on non-leader", nonLeader, "secret-add", []string{"key=x"}, 1, "", "not the leader"},
		{"add label taken", secretModel, "secret-add", []string{"--label", "mine", "key=x"}, 1, "", `label "mine" already exists`},
		{"add", secretModel, "secret-add", []string{"--owner=unit", "key#base64=" + b64, "other=v=w"}, 0, "secret:cs000000000000000003\n", ""},
		{"get json", secretModel, "secret-get", []string{"secret:owned", "--format", "json"}, 0, `{"pass":"b"}` + "\n", ""},
		{"get key", secretModel, "secret-get", []string{"secret:owned", "pass"}, 0, "b\n", ""},
		{"get key base64", secretModel, "secret-get", []string{"secret:owned", "pass#base64"}, 0, "Yg==\n", ""},
		{"get missing key", secretModel, "secret-get", []string{"secret:owned", "nope"}, 1, "", `secret key "nope" not found`},
		{"get by label", secretModel, "secret-get", []string{"--label=mine", "--format=json"}, 0, `{"pass":"b"}` + "\n", ""},
		{"get nothing", secretModel, "secret-get", nil, 2, "", "require either a secret URI or label"},
		{"get peek and refresh", secretModel, "secret-get", []string{"secret:owned", "--peek", "--refresh"}, 2, "", "specify one of --peek or --refresh but not both"},
		{"get bad URI", secretModel, "secret-get", []string{"owned"}, 2, "", `secret URI "owned" not valid`},
		{"get unknown", secretModel, "secret-get", []string{"secret:nope"}, 1, "", `secret "secret:nope" not found`},
		{"get ungranted", ungranted, "secret-get", []string{"secret:theirs", "--format=json"}, 1, "", `ERROR "web/0" is not allowed to read this secret`},
		{"get bad format", secretModel, "secret-get", []string{"secret:owned", "--format", "smart"}, 2, "", `unknown format "smart"`},
		{"set observed", secretModel, "secret-set", []string{"secret:theirs", "token=x"}, 1, "", "permission denied"},
		{"set app-owned on non-leader", nonLeader, "secret-set", []string{"secret:owned", "pass=x"}, 1, "", "permission denied"},
		{"set no ID", secretModel, "secret-set", nil, 2, "", "missing secret URI"},
		{"info-get", secretModel, "secret-info-get", []string{"secret:owned", "--format=json"}, 0,
			`{"owned":{"label":"mine","owner":"application","revision":2}}` + "\n", ""},
		{"info-get both", secretModel, "secret-info-get", []string{"secret:owned", "--label", "mine"}, 2, "", "specify either a secret URI or label but not both"},
		{"info-get observed", secretModel, "secret-info-get", []string{"secret:theirs"}, 1, "", "not found"},
		{"ids", secretModel, "secret-ids", []string{"--format=json"}, 0, `["owned"]` + "\n", ""},
		{"ids non-leader", nonLeader, "secret-ids", []string{"--format=json"}, 0, "[]\n", ""},
		{"grant no relation", secretModel, "secret-grant", []string{"secret:owned"}, 2, "", "no relation id specified"},
		{"grant unknown relation", secretModel, "secret-grant", []string{"secret:owned", "-r", "9"}, 2, "", "relation not found"},
		{"grant foreign unit", secretModel, "secret-grant", []string{"secret:owned", "-r", "2", "--unit", "mysql/0"}, 2, "", `cannot specify unit "mysql/0" in relation to application "pg"`},
		{"revoke nobody", secretModel, "secret-revoke", []string{"secret:owned"}, 2, "", "missing relation or application or unit"},
		{"revoke app and unit", secretModel, "secret-revoke", []string{"secret:owned", "--application", "pg", "--unit", "pg/0"}, 2, "", "specify only one of application or unit"},
		{"revoke relation and app", secretModel, "secret-revoke", []string{"secret:owned", "-r", "2", "--app", "pg"}, 2, "", "do not specify both relation and app"},
		{"remove unknown revision", secretModel, "secret-remove", []string{"secret:owned", "--revision", "7"}, 1, "", "revision 7 not found"},
		{"remove observed", secretModel, "secret-remove", []string{"secret:theirs"}, 1, "", "permission denied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.model()
			out, stderr, code := m.Exec(tt.tool, tt.args, nil)
			if code != tt.code || !strings.Contains(string(stderr), tt.stderr) || (tt.out != "" && string(out) != tt.out) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr containing %q", code, out, stderr, tt.code, tt.out, tt.stderr)
			}
			if code != 0 && m.Staged != nil && m.Staged.Secrets != nil && !reflect.DeepEqual(m.Staged.Secrets, secretModel().Secrets) {
				t.Errorf("a refused call changed the secrets: %v", m.Staged.Secrets)
			}
		})
	}
}

// TestSecretToolsStage: secret changes are staged as Juju applies them,
// only when the hook exits 0.
func TestSecretToolsStage(t *testing.T) {
	m := secretModel()
	steps := [][]string{
		{"secret-set", "secret:owned", "--label", "renamed", "pass=c"},
		{"secret-grant", "secret:owned", "-r", "db:2", "--unit", "pg/0"},
		{"secret-grant", "secret:owned", "-r", "2"},
		{"secret-revoke", "secret:owned", "--unit", "pg/0"},
		{"secret-remove", "secret:owned", "--revision", "1"},
		{"secret-get", "secret:theirs", "--label", "upstream"},
	}
	for _, s := range steps {
		if _, stderr, code := m.Exec(s[0], s[1:], nil); code != 0 {
			t.Fatalf("%q: exit %d, %s", s, code, stderr)
		}
	}
	if !reflect.DeepEqual(m.Secrets, secretModel().Secrets) {
		t.Errorf("committed secrets changed before Commit: %v", m.Secrets)
	}
	m.Commit()
	got := m.Secrets[0]
	if got.Label != "renamed" || !reflect.DeepEqual(got.Contents, map[int]map[string]string{2: {"pass": "b"}, 3: {"pass": "c"}}) ||
		!reflect.DeepEqual(got.Grants, []jujutest.SecretGrant{{Relation: 2, App: "pg"}}) {
		t.Errorf("after commit: %+v", got)
	}
	if m.Secrets[1].Label != "upstream" || m.Secrets[1].Tracked != 3 {
		t.Errorf("observed secret after commit: %+v", m.Secrets[1])
	}
	m.Exec("secret-remove", []string{"secret:owned"}, nil)
	m.Discard()
	if len(m.Secrets) != 2 {
		t.Errorf("a discarded secret-remove removed the secret: %v", m.Secrets)
	}
}

// TestSecretToolsAsProcesses runs the typed secret client through real
// processes of the fake tools: the content reaches the model through the
// --file it writes, and the file is gone afterwards.
func TestSecretToolsAsProcesses(t *testing.T) {
	binDir := jujutest.InstallTools(t)
	dir := t.TempDir()
	t.Setenv("TMPDIR", filepath.Join(dir, "tmp"))
	if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "model.json")
	if err := jujutest.WriteModel(path, secretModel()); err != nil {
		t.Fatal(err)
	}
	tools := juju.Tools{Runner: juju.ExecRunner{Env: processEnv(binDir, path)}}
	ctx := context.Background()
	value := "multi\nline \"quoted\" \x7f\x00 ✓"
	id, err := tools.SecretAdd(ctx, juju.SecretContent{"cert": value}, &juju.SecretOptions{Owner: juju.SecretOwnerUnit, Label: "tls"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := tools.SecretGet(ctx, "", &juju.SecretGetOptions{Label: "tls"})
	if err != nil || c["cert"] != value {
		t.Errorf("secret-get: %q, %v", c["cert"], err)
	}
	info, err := tools.SecretInfoGet(ctx, id, "")
	if err != nil || info.Owner != "unit" || info.Label != "tls" || info.Revision != 1 {
		t.Errorf("secret-info-get: %+v, %v", info, err)
	}
	ids, err := tools.SecretIDs(ctx)
	if err != nil || !reflect.DeepEqual(ids, []string{id, "secret:owned"}) {
		t.Errorf("secret-ids: %v, %v", ids, err)
	}
	if err := jujutest.CommitFile(path); err != nil {
		t.Fatal(err)
	}
	m, err := jujutest.ReadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Secrets) != 3 || m.Secrets[2].Contents[1]["cert"] != value {
		t.Errorf("model secrets %v", m.Secrets)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(left) != 0 {
		t.Errorf("content files left behind: %v", left)
	}
}
