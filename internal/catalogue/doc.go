// Package catalogue holds the bad-input catalogue test: every bad input a
// user can give the root module (the core, fsm and the Juju adapter), with
// the exact error they see. The test checks each message and keeps
// docs/bad-input.md in step with the table; run it with
// OPBUS_WRITE_CATALOGUE=1 to rewrite that section of the document. The
// Kubernetes adapter, a module of its own, keeps its own section.
package catalogue
