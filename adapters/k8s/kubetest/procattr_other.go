//go:build !linux

package kubetest

import "os/exec"

// setParentDeathSignal does nothing here: only Linux can kill a child when
// its parent dies, so elsewhere a killed test binary can leave etcd and
// kube-apiserver running.
func setParentDeathSignal(*exec.Cmd) {}
