package kubetest

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal makes the kernel kill the program when the thread
// that started it ends. With run holding that thread, the program dies with
// the test binary even when no clean-up runs: a test timeout, a crash, a
// SIGKILL from go test.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
