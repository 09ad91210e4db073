// Package helm is a Go module that only pins Helm: `go build helm.sh/helm/v3/cmd/helm` here gives the
// helm CLI the tests and `tenantkit dev` install tenantkit's chart with (no download of a helm release).
package helm
