package k8s

import (
	"log/slog"

	"k8s.io/klog/v2"
)

// RouteKlog sends what client-go logs through klog's global logger to
// logger. klog's logger is process-wide state, so RouteKlog is for main,
// once, before anything logs; a [Source] never calls it. A Source gives its
// own [Options].Logger to the client-go code it runs that logs through the
// context (its informers and leader election), with or without RouteKlog.
func RouteKlog(logger *slog.Logger) {
	klog.SetSlogLogger(logger)
}
