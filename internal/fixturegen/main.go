// Command fixturegen writes the JSON documents that the diff and change-detection
// benchmarks run on. The output is deterministic: running it twice writes the same bytes,
// so the generated files are committed and a change to them shows up in review.
//
// Usage:
//
//	go run ./internal/fixturegen [-out DIR]
//
// -out defaults to testdata/fixtures (relative to the working directory, so run it from
// the repository root). A package that wants to regenerate the fixtures before its
// benchmarks can say so with
//
//	//go:generate go run ./internal/fixturegen
//
// in a file at the repository root.
//
// Files written (keys sorted; the Pods indented, the rest compact; sizes are compact):
//
//   - pod-old.json, pod-new.json: a Pod (~5 KB) as the API server returns it, with
//     managedFields, labels, annotations, an owner reference, two containers, volumes,
//     tolerations, conditions and container statuses. The only differences: container
//     "app" goes from state.running to state.terminated (exit code 1, reason Error) with
//     ready false, and metadata.resourceVersion is bumped.
//   - pod-annotated.json: pod-old with only the bookkeeping annotation opbus.dev/record
//     changed and metadata.resourceVersion bumped (the library's own write).
//   - big-old.json, big-new.json: a ~200 KB custom-resource-like document (maps, lists of
//     maps, strings, integers, floats, booleans, nulls) with exactly one leaf changed deep
//     inside.
//   - deep-old.json, deep-new.json: maps nested 30 deep with a few siblings at each level
//     and one leaf changed at the bottom.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// obj and arr keep the literals below short.
type (
	obj = map[string]any
	arr = []any
)

func main() {
	out := flag.String("out", "testdata/fixtures", "directory to write the fixtures to")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "fixturegen:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	podOld := pod()
	podNew := pod()
	terminate(podNew)
	podAnnotated := pod()
	annotate(podAnnotated)

	bigOld := big()
	bigNew := big()
	changeBig(bigNew)

	deepOld := deep()
	deepNew := deep()
	changeDeep(deepNew)

	// The Pods are indented so that a reviewer can read them; the other documents are
	// compact, since indenting 30 levels would make whitespace most of the file.
	files := []struct {
		name   string
		v      any
		indent bool
	}{
		{"pod-old.json", podOld, true},
		{"pod-new.json", podNew, true},
		{"pod-annotated.json", podAnnotated, true},
		{"big-old.json", bigOld, false},
		{"big-new.json", bigNew, false},
		{"deep-old.json", deepOld, false},
		{"deep-new.json", deepNew, false},
	}
	for _, f := range files {
		compact, err := json.Marshal(f.v)
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		b := compact
		if f.indent {
			var buf bytes.Buffer
			if err := json.Indent(&buf, compact, "", "  "); err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
			b = buf.Bytes()
		}
		b = append(b, '\n')
		if err := os.WriteFile(filepath.Join(dir, f.name), b, 0o644); err != nil {
			return err
		}
		fmt.Printf("%-20s %7d bytes compact, %7d bytes written\n", f.name, len(compact), len(b))
	}
	return nil
}

// --- Pod ---------------------------------------------------------------------

const (
	podName      = "web-7d9c5b8f6d-x2k4p"
	appContainer = "app"
	appImage     = "registry.example.com/shop/web:1.42.3"
	appImageID   = "registry.example.com/shop/web@sha256:5b1e8c0f3a7d9e2b4c6a8f0d1e3b5c7a9f2d4e6b8a0c2e4f6a8b0d2c4e6f8a0b"
	appCID       = "containerd://8f2a6c1e9b3d5f7a0c2e4b6d8f1a3c5e7b9d0f2a4c6e8b1d3f5a7c9e0b2d4f6a"
	proxyCID     = "containerd://1c3e5a7b9d0f2e4c6a8b1d3f5e7a9c0b2d4f6e8a1c3b5d7f9e0a2c4b6d8f1e3a"
)

// pod returns the Pod in its steady state: both containers running and ready.
func pod() obj {
	return obj{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata": obj{
			"name":              podName,
			"generateName":      "web-7d9c5b8f6d-",
			"namespace":         "shop",
			"uid":               "6f1c2b7e-3a9d-4e5f-8b0c-1d2e3f4a5b6c",
			"resourceVersion":   "48213977",
			"generation":        1,
			"creationTimestamp": "2026-03-14T09:26:53Z",
			"labels": obj{
				"app":                       "web",
				"app.kubernetes.io/name":    "web",
				"app.kubernetes.io/part-of": "shop",
				"pod-template-hash":         "7d9c5b8f6d",
			},
			"annotations": obj{
				"kubectl.kubernetes.io/restartedAt": "2026-03-14T09:26:41Z",
				"prometheus.io/scrape":              "true",
				"prometheus.io/port":                "9090",
				"opbus.dev/record":                  `{"v":1,"digests":{"web/crash":"b1f0c4a2"},"slots":{}}`,
			},
			"ownerReferences": arr{
				obj{
					"apiVersion":         "apps/v1",
					"kind":               "ReplicaSet",
					"name":               "web-7d9c5b8f6d",
					"uid":                "0a9b8c7d-6e5f-4a3b-9c2d-1e0f9a8b7c6d",
					"controller":         true,
					"blockOwnerDeletion": true,
				},
			},
			"managedFields": arr{
				obj{
					"manager":    "kube-controller-manager",
					"operation":  "Update",
					"apiVersion": "v1",
					"time":       "2026-03-14T09:26:53Z",
					"fieldsType": "FieldsV1",
					"fieldsV1": obj{
						"f:metadata": obj{
							"f:annotations":  obj{".": obj{}, "f:kubectl.kubernetes.io/restartedAt": obj{}, "f:prometheus.io/scrape": obj{}},
							"f:generateName": obj{},
							"f:labels":       obj{".": obj{}, "f:app": obj{}, "f:pod-template-hash": obj{}},
							"f:ownerReferences": obj{
								".": obj{},
								`k:{"uid":"0a9b8c7d-6e5f-4a3b-9c2d-1e0f9a8b7c6d"}`: obj{},
							},
						},
						"f:spec": obj{
							`f:containers`: obj{
								`k:{"name":"app"}`:         managedContainer(),
								`k:{"name":"log-shipper"}`: managedContainer(),
							},
							"f:restartPolicy": obj{}, "f:serviceAccountName": obj{},
							"f:volumes": obj{".": obj{}, `k:{"name":"cache"}`: obj{}, `k:{"name":"config"}`: obj{}},
						},
					},
				},
				obj{
					"manager":     "kubelet",
					"operation":   "Update",
					"apiVersion":  "v1",
					"time":        "2026-03-14T09:27:12Z",
					"fieldsType":  "FieldsV1",
					"subresource": "status",
					"fieldsV1": obj{
						"f:status": obj{
							"f:conditions": obj{
								`k:{"type":"ContainersReady"}`: managedCondition(),
								`k:{"type":"Ready"}`:           managedCondition(),
							},
							"f:containerStatuses": obj{}, "f:phase": obj{}, "f:podIP": obj{}, "f:startTime": obj{},
						},
					},
				},
				obj{
					"manager":    "opbus",
					"operation":  "Apply",
					"apiVersion": "v1",
					"time":       "2026-03-14T09:27:15Z",
					"fieldsType": "FieldsV1",
					"fieldsV1": obj{
						"f:metadata": obj{"f:annotations": obj{"f:opbus.dev/record": obj{}}},
					},
				},
			},
		},
		"spec": obj{
			"containers": arr{
				obj{
					"name":            appContainer,
					"image":           appImage,
					"imagePullPolicy": "IfNotPresent",
					"env": arr{
						obj{"name": "GOMAXPROCS", "value": "2"},
						obj{"name": "POD_NAME", "valueFrom": obj{"fieldRef": obj{"apiVersion": "v1", "fieldPath": "metadata.name"}}},
						obj{"name": "DB_PASSWORD", "valueFrom": obj{"secretKeyRef": obj{"name": "web-db", "key": "password"}}},
					},
					"ports": arr{
						obj{"name": "http", "containerPort": 8080, "protocol": "TCP"},
						obj{"name": "metrics", "containerPort": 9090, "protocol": "TCP"},
					},
					"resources": obj{
						"requests": obj{"cpu": "250m", "memory": "256Mi"},
						"limits":   obj{"cpu": "1", "memory": "512Mi"},
					},
					"livenessProbe": obj{
						"httpGet":             obj{"path": "/healthz", "port": "http", "scheme": "HTTP"},
						"initialDelaySeconds": 10, "periodSeconds": 10, "failureThreshold": 3,
					},
					"readinessProbe": obj{
						"httpGet":       obj{"path": "/readyz", "port": "http", "scheme": "HTTP"},
						"periodSeconds": 5, "failureThreshold": 3,
					},
					"volumeMounts": arr{
						obj{"name": "config", "mountPath": "/etc/web", "readOnly": true},
						obj{"name": "cache", "mountPath": "/var/cache/web"},
						obj{"name": "kube-api-access-7xq2n", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true},
					},
					"securityContext":          obj{"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true},
					"terminationMessagePath":   "/dev/termination-log",
					"terminationMessagePolicy": "File",
				},
				obj{
					"name":  "log-shipper",
					"image": "docker.io/fluent/fluent-bit:3.2.4",
					"env": arr{
						obj{"name": "NODE_NAME", "valueFrom": obj{"fieldRef": obj{"apiVersion": "v1", "fieldPath": "spec.nodeName"}}},
					},
					"ports":                    arr{obj{"name": "http-fb", "containerPort": 2020, "protocol": "TCP"}},
					"resources":                obj{"requests": obj{"cpu": "20m", "memory": "32Mi"}, "limits": obj{"memory": "64Mi"}},
					"livenessProbe":            obj{"httpGet": obj{"path": "/", "port": 2020, "scheme": "HTTP"}, "periodSeconds": 10, "failureThreshold": 3},
					"volumeMounts":             arr{obj{"name": "cache", "mountPath": "/var/cache/web", "readOnly": true}},
					"imagePullPolicy":          "IfNotPresent",
					"terminationMessagePath":   "/dev/termination-log",
					"terminationMessagePolicy": "File",
				},
			},
			"volumes": arr{
				obj{"name": "config", "configMap": obj{"name": "web-config", "defaultMode": 420}},
				obj{"name": "cache", "emptyDir": obj{"sizeLimit": "1Gi"}},
				obj{
					"name": "kube-api-access-7xq2n",
					"projected": obj{
						"defaultMode": 420,
						"sources": arr{
							obj{"serviceAccountToken": obj{"expirationSeconds": 3607, "path": "token"}},
							obj{"configMap": obj{"name": "kube-root-ca.crt", "items": arr{obj{"key": "ca.crt", "path": "ca.crt"}}}},
						},
					},
				},
			},
			"tolerations": arr{
				obj{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
				obj{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
			},
			"dnsPolicy":                     "ClusterFirst",
			"enableServiceLinks":            true,
			"nodeName":                      "worker-3",
			"preemptionPolicy":              "PreemptLowerPriority",
			"priority":                      0,
			"restartPolicy":                 "Always",
			"schedulerName":                 "default-scheduler",
			"securityContext":               obj{"fsGroup": 1000, "runAsNonRoot": true},
			"serviceAccount":                "web",
			"serviceAccountName":            "web",
			"terminationGracePeriodSeconds": 30,
		},
		"status": obj{
			"phase":              "Running",
			"observedGeneration": 1,
			"conditions": arr{
				condition("Initialized", "2026-03-14T09:26:53Z"),
				condition("Ready", "2026-03-14T09:27:12Z"),
				condition("ContainersReady", "2026-03-14T09:27:12Z"),
				condition("PodScheduled", "2026-03-14T09:26:53Z"),
			},
			"hostIP":    "192.0.2.13",
			"hostIPs":   arr{obj{"ip": "192.0.2.13"}},
			"podIP":     "10.244.3.17",
			"podIPs":    arr{obj{"ip": "10.244.3.17"}},
			"qosClass":  "Burstable",
			"startTime": "2026-03-14T09:26:53Z",
			"containerStatuses": arr{
				obj{
					"name":         appContainer,
					"image":        appImage,
					"imageID":      appImageID,
					"containerID":  appCID,
					"ready":        true,
					"started":      true,
					"restartCount": 0,
					"state":        obj{"running": obj{"startedAt": "2026-03-14T09:26:58Z"}},
					"lastState":    obj{},
				},
				obj{
					"name":         "log-shipper",
					"image":        "docker.io/fluent/fluent-bit:3.2.4",
					"imageID":      "docker.io/fluent/fluent-bit@sha256:9d2e4f6a8b0c1d3e5f7a9b2c4d6e8f0a1b3c5d7e9f2a4b6c8d0e1f3a5b7c9d2e",
					"containerID":  proxyCID,
					"ready":        true,
					"started":      true,
					"restartCount": 0,
					"state":        obj{"running": obj{"startedAt": "2026-03-14T09:26:57Z"}},
					"lastState":    obj{},
				},
			},
		},
	}
}

func managedContainer() obj {
	return obj{
		".": obj{}, "f:env": obj{}, "f:image": obj{}, "f:name": obj{}, "f:ports": obj{},
		"f:resources": obj{}, "f:volumeMounts": obj{},
	}
}

func managedCondition() obj {
	return obj{".": obj{}, "f:lastTransitionTime": obj{}, "f:status": obj{}}
}

func condition(typ, at string) obj {
	return obj{"type": typ, "status": "True", "lastProbeTime": nil, "lastTransitionTime": at}
}

// terminate applies the kubelet's status write after container "app" exited with code 1.
func terminate(p obj) {
	meta := p["metadata"].(obj)
	meta["resourceVersion"] = "48214102"
	for _, cs := range p["status"].(obj)["containerStatuses"].(arr) {
		cs := cs.(obj)
		if cs["name"] != appContainer {
			continue
		}
		cs["ready"] = false
		cs["state"] = obj{"terminated": obj{
			"exitCode":    1,
			"reason":      "Error",
			"startedAt":   "2026-03-14T09:26:58Z",
			"finishedAt":  "2026-03-14T11:03:41Z",
			"containerID": appCID,
		}}
	}
}

// annotate applies the library's own bookkeeping write.
func annotate(p obj) {
	meta := p["metadata"].(obj)
	meta["resourceVersion"] = "48214031"
	meta["annotations"].(obj)["opbus.dev/record"] = `{"v":1,"digests":{"web/crash":"b1f0c4a2","web/ready":"7c3d9e10"},"slots":{"web/ready":{"level":"active"}}}`
}

// --- big document ------------------------------------------------------------

// rng is xorshift64*, so the output never depends on the standard library's generators.
type rng uint64

func (r *rng) next() uint64 {
	x := uint64(*r)
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	*r = rng(x)
	return x * 2685821657736338717
}

func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

func (r *rng) word() string {
	words := [...]string{
		"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
		"india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa",
	}
	return words[r.intn(len(words))]
}

const (
	bigShards   = 60
	bigRoutes   = 6
	changedShrd = 31
	changedRt   = 4
)

// big returns a custom-resource-like document of about 200 KB.
func big() obj {
	r := rng(0x9e3779b97f4a7c15)
	shards := make(arr, bigShards)
	for i := range shards {
		routes := make(arr, bigRoutes)
		for j := range routes {
			routes[j] = obj{
				"name":     fmt.Sprintf("route-%02d-%02d", i, j),
				"match":    obj{"prefix": "/" + r.word() + "/" + r.word(), "headers": arr{obj{"name": "x-tenant", "exact": r.word()}}, "methods": arr{"GET", "POST"}},
				"weight":   r.intn(100),
				"timeout":  float64(r.intn(3000)) / 100,
				"retries":  obj{"attempts": r.intn(5), "perTryTimeout": fmt.Sprintf("%dms", 100+r.intn(900)), "on": arr{"5xx", "reset", "connect-failure"}},
				"enabled":  r.intn(4) != 0,
				"mirror":   nil,
				"backends": arr{obj{"service": r.word() + "-svc", "port": 8000 + r.intn(100), "weight": 50}, obj{"service": r.word() + "-svc", "port": 8000 + r.intn(100), "weight": 50}},
				"limits":   obj{"maxConnections": 512, "maxPendingRequests": 1024, "maxRequestsPerConnection": r.intn(100), "burst": 1.5},
			}
		}
		labels := obj{}
		for k := 0; k < 6; k++ {
			labels[fmt.Sprintf("example.com/label-%d", k)] = r.word()
		}
		shards[i] = obj{
			"id":       i,
			"name":     fmt.Sprintf("shard-%03d", i),
			"zone":     fmt.Sprintf("zone-%c", 'a'+rune(i%3)),
			"labels":   labels,
			"replicas": 3 + r.intn(3),
			"ratio":    float64(r.intn(1000)) / 1000,
			"paused":   i%7 == 0,
			"routes":   routes,
			"storage":  obj{"class": "fast-ssd", "size": fmt.Sprintf("%dGi", 10*(1+r.intn(20))), "snapshots": arr{r.word(), r.word()}},
		}
	}
	data := obj{}
	for i := 0; i < 40; i++ {
		data["key-"+strconv.Itoa(i)] = fmt.Sprintf("%s.%s.%s=%d", r.word(), r.word(), r.word(), r.intn(1_000_000))
	}
	return obj{
		"apiVersion": "mesh.example.com/v1",
		"kind":       "TrafficPlan",
		"metadata": obj{
			"name": "storefront", "namespace": "shop", "generation": 212,
			"labels": obj{"app.kubernetes.io/name": "storefront", "tier": "edge"},
		},
		"spec": obj{
			"version":  "2026.3.1",
			"defaults": obj{"timeout": 15, "retries": 2, "tls": obj{"mode": "ISTIO_MUTUAL", "minVersion": "TLSv1_3"}},
			"shards":   shards,
			"data":     data,
		},
		"status": obj{"observedGeneration": 211, "phase": "Ready", "shardsReady": bigShards},
	}
}

// changeBig changes exactly one leaf:
// spec.shards[31].routes[4].limits.maxConnections 512 → 1024.
func changeBig(b obj) {
	shard := b["spec"].(obj)["shards"].(arr)[changedShrd].(obj)
	route := shard["routes"].(arr)[changedRt].(obj)
	route["limits"].(obj)["maxConnections"] = 1024
}

// --- deep document -----------------------------------------------------------

const deepLevels = 30

// deep returns maps nested deepLevels deep: the root is level 1 and each level holds the
// next under "child" beside a few sibling leaves; the bottom map holds "value".
func deep() obj {
	bottom := obj{"value": "old", "count": 1, "ok": true}
	cur := bottom
	for level := deepLevels - 1; level >= 1; level-- {
		cur = obj{
			"child":   cur,
			"name":    fmt.Sprintf("level-%02d", level),
			"depth":   level,
			"enabled": level%2 == 0,
			"tags":    arr{"t" + strconv.Itoa(level), "shared"},
			"meta":    obj{"owner": "team-" + strconv.Itoa(level%4), "weight": float64(level) / 4},
		}
	}
	return cur
}

// changeDeep changes the leaf child.child…child.value (29 "child" keys) from "old" to "new".
func changeDeep(d obj) {
	cur := d
	for range deepLevels - 1 {
		cur = cur["child"].(obj)
	}
	cur["value"] = "new"
}
