// Package parent lets the helper processes tenantkit starts notice that it is gone, so a crashed test
// run or dev session never leaves them behind.
package parent

import (
	"os"
	"time"
)

// OnExit calls orphaned once the process that started this one has exited (checked every second).
func OnExit(orphaned func()) {
	started := os.Getppid()
	if started == 1 {
		return // started by init or already orphaned: there is no parent to outlive
	}
	go func() {
		for range time.Tick(time.Second) {
			if os.Getppid() != started {
				orphaned()
				return
			}
		}
	}()
}
