package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

// components are the Kubernetes programs this one binary also runs, each as its own process, when called
// as `controlplane <component> [its flags]`: the local node (kubelet, kube-proxy) and the scheduler and
// the controller-manager loops that only a cluster with a node needs. One binary keeps one build and one
// cache entry for every Kubernetes part, all from the same k8s.io/kubernetes version.
var components = map[string]func() *cobra.Command{
	"kubelet":                 func() *cobra.Command { return kubelet.NewKubeletCommand(context.Background()) },
	"kube-proxy":              proxy.NewProxyCommand,
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
}

// runComponent runs the named component with the remaining arguments and reports whether the name was
// one; the component stops when the process that started it is gone, like the control plane does.
func runComponent(args []string) bool {
	if len(args) == 0 {
		return false
	}
	command, ok := components[args[0]]
	if !ok {
		return false
	}
	orphaned := make(chan struct{})
	go watchParent(orphaned)
	go func() {
		<-orphaned
		fmt.Fprintf(os.Stderr, "%s: parent process exited, stopping\n", args[0])
		os.Exit(0)
	}()
	cmd := command()
	cmd.SetArgs(args[1:])
	os.Exit(cli.Run(cmd))
	return true
}
