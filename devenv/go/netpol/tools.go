//go:build tools

// Package netpol pins the NetworkPolicy enforcer the local node runs: SIG Network's kube-network-policies
// (NetworkPolicy, AdminNetworkPolicy and BaselineAdminNetworkPolicy over nftables and NFQUEUE), built
// from its Go module at the version go.mod names. It is a module of its own so that its Kubernetes
// libraries never move the container runtime's (../node/go.mod).
package netpol

import (
	_ "sigs.k8s.io/kube-network-policies/cmd"
)
