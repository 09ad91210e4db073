// Command velero is Velero's own CLI and server (pkg/cmd/velero), built here so tests and `tenantkit
// dev` run a real Velero against the local control plane. `velero server` re-executes this same
// binary as `velero run-plugins` for its built-in plugins.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/tenantkit/tenantkit/devenv/go/velero/internal/parent"
	"github.com/vmware-tanzu/velero/pkg/cmd"
	"github.com/vmware-tanzu/velero/pkg/cmd/velero"
	"k8s.io/klog/v2"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

func main() {
	// `velero server` builds a controller-runtime manager without metrics options, which would serve
	// controller-runtime's metrics on :8080 (every interface, one fixed port: a second Velero on the
	// machine would fail to start). Velero's own metrics stay on --metrics-address.
	metricsserver.DefaultBindAddress = "0"
	parent.OnExit(stopWhenOrphaned)
	defer klog.Flush()
	err := velero.NewCommand(filepath.Base(os.Args[0])).Execute()
	cmd.CheckError(err)
}

// stopWhenOrphaned ends the process once whoever started it is gone. A process group leader (how
// tenantkit starts `velero server`) takes its whole group with it: the plugin processes it spawned do
// not watch their parent themselves.
func stopWhenOrphaned() {
	fmt.Fprintln(os.Stderr, "velero: parent process exited, stopping")
	if syscall.Getpgrp() == os.Getpid() {
		_ = syscall.Kill(-os.Getpid(), syscall.SIGKILL)
	}
	os.Exit(1)
}
