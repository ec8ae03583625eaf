package main

import (
	"sync"
	"text/template"
)

// manifestData is what the manifest is rendered from.
type manifestData struct {
	Kind        string // ingress or egress
	Namespace   string // the Juju model's name
	ServiceName string // the pilot's service, from the istio-pilot relation
	ServicePort string
}

// manifest returns the gateway's Kubernetes manifest. Every value in it
// has been checked: kind against a fixed set, the pilot's name and port
// against Kubernetes' syntax, and the namespace is the model's name. It is
// parsed the first time a hook renders it rather than when the program
// starts: most hooks render nothing, and every hook is a new process.
var manifest = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("manifest.yaml").Parse(manifestText))
})

// manifestText is the manifest's template.
const manifestText = `# Rendered by the istio-gateway charm; apply it with kubectl apply -f manifest.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: istio-{{.Kind}}gateway
  namespace: {{.Namespace}}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: istio-{{.Kind}}gateway
  namespace: {{.Namespace}}
  labels: {app: istio-{{.Kind}}gateway, istio: {{.Kind}}gateway}
spec:
  selector:
    matchLabels: {istio: {{.Kind}}gateway}
  template:
    metadata:
      labels: {app: istio-{{.Kind}}gateway, istio: {{.Kind}}gateway}
    spec:
      serviceAccountName: istio-{{.Kind}}gateway
      containers:
      - name: istio-proxy
        image: docker.io/istio/proxyv2:1.22.3
        args: [proxy, router, --domain, {{.Namespace}}.svc.cluster.local]
        env:
        - name: PROXY_CONFIG
          value: '{"discoveryAddress": "{{.ServiceName}}.{{.Namespace}}.svc:{{.ServicePort}}"}'
        - name: CA_ADDR
          value: {{.ServiceName}}.{{.Namespace}}.svc:{{.ServicePort}}
        ports:
        - {name: http2, containerPort: 8080}
        - {name: https, containerPort: 8443}
---
apiVersion: v1
kind: Service
metadata:
  name: istio-{{.Kind}}gateway
  namespace: {{.Namespace}}
spec:
  type: {{if eq .Kind "ingress"}}LoadBalancer{{else}}ClusterIP{{end}}
  selector: {istio: {{.Kind}}gateway}
  ports:
  - {name: http2, port: 80, targetPort: 8080}
  - {name: https, port: 443, targetPort: 8443}
`
