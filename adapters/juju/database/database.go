// Package database is the requires side of the data-platform `database`
// interface (postgresql_client, mysql_client, mongodb_client, …), which
// most charms that use a database relate with: the requirer's leader asks
// for a database in its application data, and the provider answers with
// endpoints and credentials, the credentials in a Juju secret it shares
// through `secret-user` (providers that know `requested-secrets`) or, from
// older providers, in plain fields.
//
// A charm registers its database handler with [Requires.Register]: the
// function runs with what each provider has shared so far, after the
// leader has written the request, whenever the endpoint's relations or
// the unit's leadership change, and at every secret-changed (a provider
// that rotates the password makes a new revision of its secret, with the
// relation data unchanged). Its status goes into one slot:
//
//	db := database.Requires{Endpoint: "database", Database: "app"}
//	err := db.Register(bus, "database", func(ctx context.Context, infos []database.Info) (opbus.Status, error) {
//		if len(infos) == 0 || !infos[0].Ready() {
//			return opbus.Waiting("Waiting for the database"), nil
//		}
//		… connect with infos[0]
//		return opbus.Active(""), nil
//	})
//
// [Requires.Request], [Requires.Read], [Requires.On] and
// [Requires.OnSecretChanged] are the parts, for handlers of one's own.
package database

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
)

// The fields of the contract, in the requirer's and the provider's
// application data.
const (
	// FieldDatabase is the database name: requested, then provided.
	FieldDatabase = "database"
	// FieldExtraUserRoles are the roles the requirer asks for its user.
	FieldExtraUserRoles = "extra-user-roles"
	// FieldRequestedSecrets lists, as a JSON array, the fields the
	// requirer wants shared as secrets: a provider that reads it shares
	// them through secret-<group> fields.
	FieldRequestedSecrets = "requested-secrets"
	// FieldSecretUser holds the URI of the secret with username and
	// password (and uris); FieldSecretTLS that with tls and tls-ca.
	FieldSecretUser = "secret-user"
	FieldSecretTLS  = "secret-tls"
)

// requestedSecrets are the fields a requirer asks to receive as secrets.
var requestedSecrets = []string{"username", "password", "tls", "tls-ca", "uris", "read-only-uris"}

// Requires is the requires side of one endpoint of the `database`
// interface. Its zero value is not usable: Endpoint and Database are
// needed.
type Requires struct {
	// Endpoint is the charm's relation endpoint ("database").
	Endpoint string
	// Database is the name of the database to ask for.
	Database string
	// ExtraUserRoles, if set, are the roles to ask for the charm's user
	// ("admin", "CREATEDB"), as the provider spells them.
	ExtraUserRoles string
}

// On returns the filter of a handler of the endpoint: it subscribes to
// the endpoint's relations and the unit's leadership, on the unit's key.
func (r Requires) On() opbus.On {
	return opbus.On{Kinds: []string{juju.ObjectUnit}, Fields: []string{"relations." + r.Endpoint, "leader"}}
}

// OnSecretChanged returns the filter of a handler that runs at every
// secret-changed hook, to read the new revision of a provider's secret;
// it reads the endpoint's relations too.
func (r Requires) OnSecretChanged() opbus.On {
	on := juju.OnHook(string(juju.KindSecretChanged))
	on.Kinds = []string{juju.ObjectUnit}
	on.Fields = append(on.Fields, "relations."+r.Endpoint)
	return on
}

// Register registers fn as the handler of the endpoint, with the slot id:
// two handlers, id+"-relations" under [Requires.On] and
// id+"-secret-changed" under [Requires.OnSecretChanged], each of which
// writes the request ([Requires.Request]), reads what the providers
// shared ([Requires.Read]) and puts fn's status into the slot id. An
// error of fn fails the hook, as a handler's does.
func (r Requires) Register(bus *opbus.Bus, id string, fn func(ctx context.Context, infos []Info) (opbus.Status, error)) error {
	if err := r.check(); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("database: Register(%q): nil function", id)
	}
	if err := bus.AddSlot(id); err != nil {
		return err
	}
	run := func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		if err := r.Request(ctx, ev); err != nil {
			return opbus.Status{}, err
		}
		infos, err := r.Read(ctx, ev)
		if err != nil {
			return opbus.Status{}, err
		}
		st, err := fn(ctx, infos)
		if err != nil {
			return opbus.Status{}, err
		}
		return opbus.Status{}, ev.SetSlot(id, st)
	}
	if err := bus.Handle(id+"-relations", run, r.On()); err != nil {
		return err
	}
	return bus.Handle(id+"-secret-changed", run, r.OnSecretChanged())
}

// check reports a Requires that cannot be used.
func (r Requires) check() error {
	switch {
	case r.Endpoint == "":
		return errors.New("database: Requires.Endpoint is empty")
	case r.Database == "":
		return fmt.Errorf("database: Requires.Database of endpoint %q is empty", r.Endpoint)
	}
	return nil
}

// Request writes the request into the local application's data of every
// relation on the endpoint, when the unit is the leader (only the leader
// may write application data; other units do nothing): the database
// name, the extra user roles if set, and the fields it wants as secrets.
// Writing the same request again changes nothing for the provider. It
// needs the handler's ctx (see [juju.FromContext]) and a document with
// the endpoint's relations and leader, as [Requires.On] subscribes.
func (r Requires) Request(ctx context.Context, ev *opbus.Event) error {
	if err := r.check(); err != nil {
		return err
	}
	hook := juju.FromContext(ctx)
	if hook == nil {
		return errors.New("database: Request outside juju.Run: the handler's ctx has no hook")
	}
	doc, err := juju.DocumentOf(ev)
	if err != nil {
		return err
	}
	if !doc.Leader {
		return nil
	}
	secrets, _ := json.Marshal(requestedSecrets)
	req := map[string]string{FieldDatabase: r.Database, FieldRequestedSecrets: string(secrets)}
	if r.ExtraUserRoles != "" {
		req[FieldExtraUserRoles] = r.ExtraUserRoles
	}
	for _, rel := range doc.Relations[r.Endpoint] {
		if err := hook.Tools.RelationSetApp(ctx, rel.ID, req); err != nil {
			return fmt.Errorf("database: requesting database %q on %s:%d: %w", r.Database, r.Endpoint, rel.ID, err)
		}
	}
	return nil
}

// Info is what a provider has shared on one relation. Fields it has not
// shared yet are empty.
type Info struct {
	// RelationID and App identify the relation and the provider.
	RelationID int
	App        string
	// Database is the database the provider made, which may differ from
	// the one asked for.
	Database string
	// Endpoints and ReadOnlyEndpoints are "host:port" addresses.
	Endpoints, ReadOnlyEndpoints []string
	// Version is the database server's version.
	Version string
	// Username and Password are the charm's credentials; URIs are
	// connection URIs when the provider shares them.
	Username, Password string
	URIs               string
	// TLS reports whether the server requires TLS; TLSCA is the CA that
	// signs its certificate.
	TLS   bool
	TLSCA string
	// FromSecret reports whether the credentials came from the secret
	// shared through secret-user rather than from plain fields.
	FromSecret bool
}

// Ready reports whether the provider has shared what connecting needs:
// an endpoint, a username and a password.
func (i Info) Ready() bool {
	return len(i.Endpoints) > 0 && i.Username != "" && i.Password != ""
}

// String shows the connection without the password.
func (i Info) String() string {
	return fmt.Sprintf("database %q at %s as %q (relation %d with %s)", i.Database, strings.Join(i.Endpoints, ","), i.Username, i.RelationID, i.App)
}

// GoString shows the connection without the password, for %#v.
func (i Info) GoString() string { return "database.Info{" + i.String() + "}" }

// Read returns what each provider on the endpoint has shared, in
// relation order. Credentials come from the secret named by secret-user
// (read with --refresh, so that a rotated password reaches the charm at
// secret-changed), or from the plain username and password fields of
// providers that do not use secrets; TLS settings likewise from
// secret-tls or plain fields. A secret the unit may not read yet is
// not an error: its fields stay empty until the provider grants it (test
// with errors.Is(err, juju.ErrSecretNotGranted) to tell). Any other
// failure of secret-get is returned.
func (r Requires) Read(ctx context.Context, ev *opbus.Event) ([]Info, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	doc, err := juju.DocumentOf(ev)
	if err != nil {
		return nil, err
	}
	hook := juju.FromContext(ctx)
	var infos []Info
	for _, rel := range doc.Relations[r.Endpoint] {
		d := rel.AppData
		info := Info{
			RelationID:        rel.ID,
			App:               rel.App,
			Database:          d[FieldDatabase],
			Endpoints:         split(d["endpoints"]),
			ReadOnlyEndpoints: split(d["read-only-endpoints"]),
			Version:           d["version"],
			Username:          d["username"],
			Password:          d["password"],
			URIs:              d["uris"],
			TLS:               d["tls"] == "True" || d["tls"] == "true",
			TLSCA:             d["tls-ca"],
		}
		for _, group := range []string{FieldSecretUser, FieldSecretTLS} {
			uri := d[group]
			if uri == "" {
				continue
			}
			if hook == nil {
				return nil, fmt.Errorf("database: reading %s of %s:%d outside juju.Run: the handler's ctx has no hook", group, r.Endpoint, rel.ID)
			}
			content, err := hook.Tools.SecretGet(ctx, uri, &juju.SecretGetOptions{Refresh: true})
			if errors.Is(err, juju.ErrSecretNotGranted) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("database: reading %s of %s:%d: %w", group, r.Endpoint, rel.ID, err)
			}
			if group == FieldSecretUser {
				info.FromSecret = true
				info.Username, info.Password = content["username"], content["password"]
				if u := content["uris"]; u != "" {
					info.URIs = u
				}
			} else {
				info.TLS = content["tls"] == "True" || content["tls"] == "true"
				info.TLSCA = content["tls-ca"]
			}
		}
		infos = append(infos, info)
	}
	slices.SortFunc(infos, func(a, b Info) int { return a.RelationID - b.RelationID })
	return infos, nil
}

// split splits a comma-separated list, dropping empty elements.
func split(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
