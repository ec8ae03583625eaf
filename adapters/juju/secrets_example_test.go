package juju_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// A charm that makes a database password on install and shares it with
// the database relation, tested offline: the harness returns the model the
// hook leaves, secrets included. Printing the content shows its keys only.
func ExampleTools_SecretAdd() {
	h := &jujutest.Harness{
		Setup: func(b *opbus.Bus) error {
			return b.Handle("password", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
				tools := juju.FromContext(ctx).Tools
				content := juju.SecretContent{"password": "s3cr3t-generated"}
				id, err := tools.SecretAdd(ctx, content, &juju.SecretOptions{Label: "db-password"})
				if err != nil {
					return opbus.Status{}, err
				}
				fmt.Println("made", content)
				ev.SetValue("password-secret", id) // the ID, never the content
				return opbus.Active(""), tools.SecretGrant(ctx, id, 1, "")
			}, juju.OnHook("install"))
		},
	}
	model := &jujutest.Model{Unit: "web/0", Leader: true, Relations: []jujutest.Relation{{ID: 1, Endpoint: "db", RemoteApp: "pg"}}}
	out, err := h.Run(context.Background(), "install", model)
	if err != nil {
		fmt.Println(err)
		return
	}
	s := out.Secrets[0]
	fmt.Println(s.ID, s.Owner, s.Label, s.Grants)
	// Output:
	// made juju.SecretContent{password: redacted}
	// secret:cs000000000000000001 application db-password [{1 pg }]
}

// A handler that reads a user secret named by a config option shows a
// secret not granted yet as Blocked, in any Juju's words, and fails the
// hook (which Juju retries) on any other failure.
func ExampleErrSecretNotGranted() {
	h := &jujutest.Harness{
		Setup: func(b *opbus.Bus) error {
			return b.Handle("secret", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
				id, _ := ev.New["config"].(map[string]any)["password-secret"].(string)
				_, err := juju.FromContext(ctx).Tools.SecretGet(ctx, id, nil)
				if errors.Is(err, juju.ErrSecretNotGranted) {
					return opbus.Blocked("secret not granted: juju grant-secret"), nil
				}
				return opbus.Active(""), err
			}, opbus.On{Fields: []string{"config"}})
		},
	}
	model := &jujutest.Model{
		Unit: "web/0", Config: map[string]any{"password-secret": "secret:user1"},
		Secrets: []jujutest.Secret{{ID: "secret:user1", Ungranted: true, Contents: map[int]map[string]string{1: {"password": "x"}}}},
	}
	out, err := h.Run(context.Background(), "config-changed", model)
	fmt.Println(out.UnitStatus, err)
	model.Failures = map[string]string{"secret-get": "permission denied"} // as Juju before 3.6 says it
	out, err = h.Run(context.Background(), "config-changed", model)
	fmt.Println(out.UnitStatus, err)
	// Output:
	// {blocked secret not granted: juju grant-secret} <nil>
	// {blocked secret not granted: juju grant-secret} <nil>
}
