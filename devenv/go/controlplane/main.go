// Command controlplane runs a real, minimal Kubernetes control plane in one process for tenantkit's tests
// and `tenantkit dev`: embedded etcd, kube-apiserver and a kube-controller-manager limited to the
// controllers tenantkit relies on. Called as `controlplane kubelet|kube-proxy|kube-scheduler|
// kube-controller-manager …` it runs that component instead (components.go), for the local node.
//
// The PKI (CA, serving certificate, service-account keys, token file, controller-manager kubeconfig) is
// written by the caller into --pki-dir, so that the caller can keep issuing client certificates for test
// users while the control plane runs.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmoptions "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
)

// controllers is the exact set of kube-controller-manager loops tenantkit depends on; everything else
// (nodes, deployments, jobs, ...) stays off to keep the test control plane small.
var controllers = []string{
	"garbage-collector-controller",
	"namespace-controller",
	"resourcequota-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"clusterrole-aggregation-controller",
	"root-ca-certificate-publisher-controller",
}

type options struct {
	dataDir         string
	pkiDir          string
	etcdClientPort  int
	etcdPeerPort    int
	securePort      int
	address         string
	noFsync         bool
	extraAPIFlags   string
	controllersGate string
}

func main() {
	if runComponent(os.Args[1:]) {
		return
	}
	var o options
	flag.StringVar(&o.dataDir, "data-dir", "", "directory for etcd data (created if missing)")
	flag.StringVar(&o.pkiDir, "pki-dir", "", "directory holding ca.crt, apiserver.crt/key, sa.key/pub, tokens.csv, controller-manager.kubeconfig")
	flag.IntVar(&o.etcdClientPort, "etcd-client-port", 0, "loopback port for etcd clients")
	flag.IntVar(&o.etcdPeerPort, "etcd-peer-port", 0, "loopback port for etcd peers")
	flag.IntVar(&o.securePort, "secure-port", 0, "HTTPS port of kube-apiserver")
	flag.StringVar(&o.address, "address", "127.0.0.1", "the one address kube-apiserver listens on and advertises (the local node's address when Pods must reach it)")
	flag.BoolVar(&o.noFsync, "unsafe-no-fsync", false, "skip fsync in etcd (tests only: fast, not crash-safe)")
	flag.StringVar(&o.extraAPIFlags, "apiserver-extra-flags", "", "space-separated extra kube-apiserver flags")
	flag.StringVar(&o.controllersGate, "start-controllers-after", "", "start kube-controller-manager only once this file exists (lets the caller install CRDs first, so the garbage collector knows them from its first discovery)")
	flag.Parse()
	if o.dataDir == "" || o.pkiDir == "" || o.etcdClientPort == 0 || o.etcdPeerPort == 0 || o.securePort == 0 {
		fmt.Fprintln(os.Stderr, "controlplane: --data-dir, --pki-dir, --etcd-client-port, --etcd-peer-port and --secure-port are required")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "controlplane: %v\n", err)
		os.Exit(1)
	}
}

func run(o options) error {
	etcd, err := startEtcd(o)
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	defer etcd.Close()
	fmt.Fprintf(os.Stderr, "controlplane: etcd ready on 127.0.0.1:%d\n", o.etcdClientPort)

	apiErr := make(chan error, 1)
	go func() { apiErr <- runCommand(apiserver.NewAPIServerCommand(), apiserverArgs(o)) }()

	kcmErr := make(chan error, 1)
	go func() {
		// The controller-manager exits if it cannot reach the API server, so start it once /readyz answers.
		if err := waitForAPIServer(o); err != nil {
			kcmErr <- err
			return
		}
		if err := waitForFile(o.controllersGate); err != nil {
			kcmErr <- err
			return
		}
		kcmErr <- runControllerManager(controllerManagerArgs(o))
	}()

	orphaned := make(chan struct{})
	go watchParent(orphaned)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case err := <-apiErr:
		return fmt.Errorf("kube-apiserver exited: %v", err)
	case err := <-kcmErr:
		return fmt.Errorf("kube-controller-manager exited: %v", err)
	case err := <-etcd.Err():
		return fmt.Errorf("etcd failed: %v", err)
	case <-orphaned:
		fmt.Fprintln(os.Stderr, "controlplane: parent process exited, stopping")
		return nil
	case s := <-sig:
		fmt.Fprintf(os.Stderr, "controlplane: %s received, stopping\n", s)
		return nil
	}
}

func runCommand(cmd *cobra.Command, args []string) error {
	cmd.SetArgs(args)
	if code := cli.Run(cmd); code != 0 {
		return fmt.Errorf("exit code %d", code)
	}
	return nil
}

// runControllerManager runs kube-controller-manager without its cobra command: the command applies the
// process-wide logging configuration, which kube-apiserver already applied in this process (klog allows
// that once), so we parse the same flags and call its Run directly.
func runControllerManager(args []string) error {
	s, err := kcmoptions.NewKubeControllerManagerOptions()
	if err != nil {
		return err
	}
	known, disabled, aliases := controllermanager.KnownControllers(), controllermanager.ControllersDisabledByDefault(), controllermanager.ControllerAliases()
	named := s.Flags(known, disabled, aliases)
	s.ParsedFlags = &named
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	for _, f := range named.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := s.ComponentGlobalsRegistry.Set(); err != nil {
		return err
	}
	ctx := context.Background()
	c, err := s.Config(ctx, known, disabled, aliases)
	if err != nil {
		return err
	}
	return controllermanager.Run(ctx, c.Complete())
}

func startEtcd(o options) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = "tenantkit"
	cfg.Dir = filepath.Join(o.dataDir, "etcd")
	cfg.LogLevel = "error"
	cfg.UnsafeNoFsync = o.noFsync
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", o.etcdClientPort)}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", o.etcdPeerPort)}
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("not ready after 60s")
	}
}

func apiserverArgs(o options) []string {
	pki := func(name string) string { return filepath.Join(o.pkiDir, name) }
	args := []string{
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", o.etcdClientPort),
		fmt.Sprintf("--secure-port=%d", o.securePort),
		"--bind-address=" + o.address,
		"--advertise-address=" + o.address,
		"--tls-cert-file=" + pki("apiserver.crt"),
		"--tls-private-key-file=" + pki("apiserver.key"),
		"--client-ca-file=" + pki("ca.crt"),
		"--token-auth-file=" + pki("tokens.csv"),
		// Node authorization and NodeRestriction keep a kubelet (the local node, when one runs) to its own
		// Node and Pods; kube-apiserver calls kubelets as its own client and checks their serving certificates.
		"--authorization-mode=Node,RBAC",
		"--kubelet-client-certificate=" + pki("apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + pki("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority=" + pki("ca.crt"),
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--anonymous-auth=false",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + pki("sa.pub"),
		"--service-account-signing-key-file=" + pki("sa.key"),
		"--service-cluster-ip-range=10.96.0.0/16",
		"--enable-admission-plugins=NamespaceLifecycle,ServiceAccount,NodeRestriction,ResourceQuota,LimitRanger,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ValidatingAdmissionPolicy",
		"--allow-privileged=true",
		"--profiling=false",
		// The kubernetes Service gets endpoints only where Pods can reach them: not on loopback.
		"--endpoint-reconciler-type=" + endpointReconciler(o.address),
		"--v=0",
	}
	if strings.TrimSpace(o.extraAPIFlags) != "" {
		args = append(args, strings.Fields(o.extraAPIFlags)...)
	}
	return args
}

func endpointReconciler(address string) string {
	if ip := net.ParseIP(address); ip != nil && ip.IsLoopback() {
		return "none"
	}
	return "lease"
}

func controllerManagerArgs(o options) []string {
	pki := func(name string) string { return filepath.Join(o.pkiDir, name) }
	return []string{
		"--kubeconfig=" + pki("controller-manager.kubeconfig"),
		"--controllers=" + strings.Join(controllers, ","),
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + pki("sa.key"),
		"--root-ca-file=" + pki("ca.crt"),
		"--leader-elect=false",
		"--secure-port=0",
	}
}

func waitForAPIServer(o options) error {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(o.pkiDir, "controller-manager.kubeconfig"))
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for {
		_, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// watchParent closes orphaned when the process that started us is gone, so a crashed test run or dev
// session never leaves a control plane behind.
func watchParent(orphaned chan<- struct{}) {
	parent := os.Getppid()
	for range time.Tick(time.Second) {
		if os.Getppid() != parent {
			close(orphaned)
			return
		}
	}
}

func waitForFile(path string) error {
	if path == "" {
		return nil
	}
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not appear within 10 minutes", path)
}
