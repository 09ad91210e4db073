// A failpoint for tests, added to Velero's pkg/controller by devenv/velero/build.ts (a `go build -overlay`
// that also puts one call to it in backup_controller.go). Velero's backup controller patches a Backup to
// Finalizing and only afterwards records it in its tracker as post-processing; when its finalizer
// controller completes the Backup (and drops it from the tracker) in between, the late record stays for
// the life of the process and Velero refuses every deletion of that finished Backup as "still in progress".
// On a busy machine that happens to a few backups in a hundred. With TENANTKIT_FAILPOINT_POST_PROCESSING_DELAY
// set (a Go duration), the controller waits that long before the record, so the finalizer always wins:
// the same race, every time. Unset, nothing changes.

package controller

import (
	"os"
	"time"
)

func tenantkitFailpointBeforePostProcessing() {
	if delay, err := time.ParseDuration(os.Getenv("TENANTKIT_FAILPOINT_POST_PROCESSING_DELAY")); err == nil && delay > 0 {
		time.Sleep(delay)
	}
}
