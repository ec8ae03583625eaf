package juju_test

import (
	"context"
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
