package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/internal/cliflags"
)

// explainCmd runs "explain".
func explainCmd(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(prog+" explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	kctx := fs.String("context", "", "the kubeconfig context (default: its current context)")
	var ns string
	fs.StringVar(&ns, "namespace", "", "the object's namespace (default: the context's)")
	fs.StringVar(&ns, "n", "", "short for --namespace")
	operator := fs.String("operator", "", "the operator's name (k8s.Options.Name; default: the default operator, whose record is opbus.dev/record)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	args, err := cliflags.Parse(fs, args) // flags anywhere, as kubectl takes them
	if errors.Is(err, flag.ErrHelp) {
		return nil // -h: the flag set printed its usage
	}
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if len(args) != 2 {
		return fmt.Errorf("%w: got %d arguments %q: expected RESOURCE and NAME", errUsage, len(args), args)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = *kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: *kctx})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil {
			return fmt.Errorf("kubeconfig: %w", err)
		}
	}
	mapping, err := resolve(cfg, args[0])
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = dyn.Resource(mapping.Resource).Namespace(ns)
	}
	u, err := ri.Get(ctx, args[1], metav1.GetOptions{})
	if err != nil {
		return err
	}
	r, err := k8s.ExplainObject(u, *operator, time.Now())
	if err != nil {
		return err
	}
	if !*asJSON {
		_, err = fmt.Fprint(stdout, r)
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// resolve finds the resource that arg names, as kubectl does: a resource
// (plural, singular or short name, optionally .group) or a kind
// (Kind.group).
func resolve(cfg *rest.Config, arg string) (*meta.RESTMapping, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cached := memory.NewMemCacheClient(dc)
	// Short names ("cm", "deploy") as kubectl expands them.
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, func(string) {})
	gr := schema.ParseGroupResource(strings.ToLower(arg))
	if gvr, err := mapper.ResourceFor(gr.WithVersion("")); err == nil {
		gvk, err := mapper.KindFor(gvr)
		if err != nil {
			return nil, err
		}
		return mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if m, err := mapper.RESTMapping(schema.ParseGroupKind(arg)); err == nil {
		return m, nil
	}
	return nil, fmt.Errorf("resource %q: the server has no such resource or kind (expected one as kubectl takes it: \"pods\", \"deployments.apps\", \"Widget.example.com\")", arg)
}
