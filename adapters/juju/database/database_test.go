package database_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/database"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// charm is a requirer charm whose database function keeps what the
// providers shared.
func charm(db database.Requires, got *[]database.Info) *jujutest.Harness {
	return &jujutest.Harness{
		Options: &juju.Options{Endpoints: []string{"database"}},
		Setup: func(b *opbus.Bus) error {
			return db.Register(b, "database", func(ctx context.Context, infos []database.Info) (opbus.Status, error) {
				*got = infos
				if len(infos) == 0 || !infos[0].Ready() {
					return opbus.Waiting("Waiting for the database"), nil
				}
				return opbus.Active(""), nil
			})
		},
	}
}

// provider returns a model whose relation 4 is with a provider that
// shares credentials in a secret (secret-user, secret-tls) and relation 5
// with an older provider that shares them in plain fields.
func provider() *jujutest.Model {
	return &jujutest.Model{
		Unit: "app/0", Leader: true,
		Relations: []jujutest.Relation{
			{ID: 4, Endpoint: "database", RemoteApp: "postgresql", RemoteUnits: []string{"postgresql/0"},
				RemoteAppData: map[string]string{"database": "app", "endpoints": "10.0.0.5:5432,10.0.0.7:5432", "read-only-endpoints": "10.0.0.6:5432",
					"version": "16.2", "secret-user": "secret:pguser", "secret-tls": "secret:pgtls"}},
			{ID: 5, Endpoint: "database", RemoteApp: "mysql", RemoteUnits: []string{"mysql/0"},
				RemoteAppData: map[string]string{"database": "app", "endpoints": "10.0.1.5:3306", "username": "relation-5", "password": "plain-pw", "version": "8.0"}},
		},
		Secrets: []jujutest.Secret{
			{ID: "secret:pguser", Contents: map[int]map[string]string{1: {"username": "relation-4", "password": "secret-pw"}}},
			{ID: "secret:pgtls", Contents: map[int]map[string]string{1: {"tls": "True", "tls-ca": "-----BEGIN CERTIFICATE-----"}}},
		},
	}
}

// TestRequiresContract checks the requirer against the provider's
// databag contract: the leader writes the request (database, extra user
// roles, requested-secrets) into its application data on every relation
// of the endpoint; a non-leader writes nothing; credentials are read
// from the secret named by secret-user, or from the plain fields of older
// providers; endpoints are split.
func TestRequiresContract(t *testing.T) {
	var got []database.Info
	db := database.Requires{Endpoint: "database", Database: "app", ExtraUserRoles: "CREATEDB"}
	m, err := charm(db, &got).Run(context.Background(), "leader-elected", provider())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int{4, 5} {
		data := m.Relation(id).LocalAppData
		var secrets []string
		if err := json.Unmarshal([]byte(data["requested-secrets"]), &secrets); err != nil || data["database"] != "app" || data["extra-user-roles"] != "CREATEDB" {
			t.Errorf("relation %d: request %v", id, data)
		}
		for _, f := range []string{"username", "password", "tls", "tls-ca"} {
			if !strings.Contains(data["requested-secrets"], `"`+f+`"`) {
				t.Errorf("relation %d: requested-secrets %s lacks %s", id, data["requested-secrets"], f)
			}
		}
	}
	want := []database.Info{
		{RelationID: 4, App: "postgresql", Database: "app", Endpoints: []string{"10.0.0.5:5432", "10.0.0.7:5432"}, ReadOnlyEndpoints: []string{"10.0.0.6:5432"},
			Version: "16.2", Username: "relation-4", Password: "secret-pw", TLS: true, TLSCA: "-----BEGIN CERTIFICATE-----", FromSecret: true},
		{RelationID: 5, App: "mysql", Database: "app", Endpoints: []string{"10.0.1.5:3306"}, Version: "8.0", Username: "relation-5", Password: "plain-pw"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %#v\nwant %#v", got, want)
	}
	if m.UnitStatus.Status != "active" {
		t.Errorf("status %v", m.UnitStatus)
	}
	for _, info := range got {
		if s := fmt.Sprintf("%v %+v %#v", info, info, info); strings.Contains(s, info.Password) {
			t.Errorf("the password shows in %s", s)
		}
	}

	follower := provider()
	follower.Leader = false
	m, err = charm(db, &got).Run(context.Background(), "leader-elected", follower)
	if err != nil || m.CallCount("relation-set") != 0 || len(got) != 2 || got[0].Password != "secret-pw" {
		t.Errorf("non-leader: %v, %d relation-set calls, %v", err, m.CallCount("relation-set"), got)
	}
}

// TestRequiresSecretNotGrantedAndRotated: before the provider grants its
// secret the credentials are empty and the charm waits, without failing;
// a new revision reaches the charm at secret-changed.
func TestRequiresSecretNotGrantedAndRotated(t *testing.T) {
	var got []database.Info
	db := database.Requires{Endpoint: "database", Database: "app"}
	m := provider()
	m.Relations = m.Relations[:1]
	m.Secrets = m.Secrets[:1]
	m.Secrets[0].Ungranted = true
	h := charm(db, &got)
	m, err := h.Run(context.Background(), "database-relation-changed", m)
	if err != nil || m.UnitStatus.Status != "waiting" || got[0].Ready() {
		t.Fatalf("ungranted: %v, status %v, %v", err, m.UnitStatus, got)
	}
	m.Secrets[0].Ungranted = false
	if m, err = h.Run(context.Background(), "secret-changed", m); err != nil || got[0].Password != "secret-pw" || m.UnitStatus.Status != "active" {
		t.Fatalf("granted: %v, %v, status %v", err, got, m.UnitStatus)
	}
	m.Secrets[0].Contents[2] = map[string]string{"username": "relation-4", "password": "rotated-pw"}
	if _, err = h.Run(context.Background(), "secret-changed", m); err != nil || got[0].Password != "rotated-pw" {
		t.Errorf("rotated: %v, %v", err, got)
	}
}

// TestRequiresErrors: a Requires without endpoint or database is an error
// naming what is missing.
func TestRequiresErrors(t *testing.T) {
	var ev opbus.Event
	if _, err := (database.Requires{Database: "app"}).Read(context.Background(), &ev); err == nil || !strings.Contains(err.Error(), "Endpoint is empty") {
		t.Errorf("no endpoint: %v", err)
	}
	if err := (database.Requires{Endpoint: "db"}).Request(context.Background(), &ev); err == nil || !strings.Contains(err.Error(), `Database of endpoint "db" is empty`) {
		t.Errorf("no database: %v", err)
	}
}

// TestRequestAtRelationCreated: at relation-created, before the provider
// has shared anything, the leader writes its request and the charm waits.
func TestRequestAtRelationCreated(t *testing.T) {
	var got []database.Info
	db := database.Requires{Endpoint: "database", Database: "app"}
	m := &jujutest.Model{Unit: "app/0", Leader: true, Relations: []jujutest.Relation{{ID: 7, Endpoint: "database", RemoteApp: "postgresql"}}}
	m, err := charm(db, &got).Run(context.Background(), "database-relation-created", m)
	if err != nil {
		t.Fatal(err)
	}
	if d := m.Relation(7).LocalAppData; d["database"] != "app" || d["requested-secrets"] == "" {
		t.Errorf("request %v", d)
	}
	if len(got) != 1 || got[0].Ready() || m.UnitStatus != (jujutest.Status{Status: "waiting", Message: "Waiting for the database"}) {
		t.Errorf("infos %v, status %v", got, m.UnitStatus)
	}
}
