package main

import "text/template"

// manifestData is what the manifest is rendered from.
type manifestData struct {
	Kind        string // ingress or egress
	Namespace   string // the Juju model's name
	ServiceName string // the pilot's service, from the istio-pilot relation
	ServicePort string
}

// manifest is the gateway's Kubernetes manifest. Every value in it has been
// checked: kind against a fixed set, the pilot's name and port against
// Kubernetes' syntax, and the namespace is the model's name.
var manifest = template.Must(template.New("manifest.yaml").Parse(`# Rendered by the istio-gateway charm; apply it with kubectl apply -f manifest.yaml
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
`))
