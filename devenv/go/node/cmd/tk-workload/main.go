// Command tk-workload is the one program in the local node's images: the Pod sandbox's pause process
// (no arguments: wait for a signal, reap orphans as PID 1) and a small workload for tests
// (`sleep SECONDS`, `exit CODE`, `write FILE TEXT`, `cat FILE`, `serve PORT` answers HTTP with its host name,
// `get URL` prints a body, `admit PORT CERT KEY` an allow-all admission webhook (admit.go), `fill DIR COUNT
// MIB BIG_MIB`, `sums DIR`, `churn FILE` and `deep DIR BYTES`: data.go; commands
// chain with `then`, e.g. `fill /data 4 2 64 then sums /data then sleep 3600`),
// and local-path-provisioner's volume helper (`-p DIR -s BYTES -m MODE -a create|delete`, its
// setupCommand and teardownCommand).
package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	args := os.Args[1:]
	if len(args) == 0 || args[0] == "pause" {
		pause()
		return
	}
	start := 0
	for i, a := range args {
		if a == "then" {
			command(args[start:i])
			start = i + 1
		}
	}
	command(args[start:])
}

func command(args []string) {
	if len(args) == 0 {
		fail("an empty command (`then` at the start or the end)")
	}
	switch args[0] {
	case "-p":
		volumeHelper(args)
	case "sleep":
		seconds, err := strconv.ParseFloat(arg(args, 1), 64)
		if err != nil {
			fail("sleep needs a number of seconds: %v", err)
		}
		fmt.Printf("sleeping %v s\n", seconds)
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
		select {
		case <-time.After(time.Duration(seconds * float64(time.Second))):
		case s := <-stop:
			fmt.Printf("%s received, stopping\n", s)
		}
	case "write":
		if err := os.WriteFile(arg(args, 1), []byte(arg(args, 2)), 0o644); err != nil {
			fail("write: %v", err)
		}
	case "cat":
		data, err := os.ReadFile(arg(args, 1))
		if err != nil {
			fail("cat: %v", err)
		}
		os.Stdout.Write(data)
	case "exit":
		code, err := strconv.Atoi(arg(args, 1))
		if err != nil {
			fail("exit needs a code: %v", err)
		}
		os.Exit(code)
	case "serve":
		host, _ := os.Hostname()
		http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintf(w, "hello from %s\n", host) })
		fmt.Printf("serving on :%s\n", arg(args, 1))
		if err := http.ListenAndServe(":"+arg(args, 1), nil); err != nil {
			fail("serve: %v", err)
		}
	case "get":
		res, err := get(arg(args, 1))
		if err != nil {
			fail("get: %v", err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		fmt.Printf("%d %s", res.StatusCode, body)
	case "admit":
		admit(arg(args, 1), arg(args, 2), arg(args, 3))
	case "fill":
		fill(arg(args, 1), number(args, 2), number(args, 3), number(args, 4))
	case "sums":
		sums(arg(args, 1))
	case "churn":
		churn(arg(args, 1))
	case "deep":
		deep(arg(args, 1), number(args, 2))
	default:
		fail("unknown command %q; use pause, sleep SECONDS, exit CODE, write FILE TEXT, cat FILE, serve PORT, get URL, admit PORT CERT KEY, fill DIR COUNT MIB BIG_MIB, sums DIR, churn FILE or deep DIR BYTES", args[0])
	}
}

// volumeHelper makes (create) or removes (delete) a local-path volume's folder, as the provisioner's helper
// Pod: world-writable, so a Pod of any user can write to the volume.
func volumeHelper(args []string) {
	opts := map[string]string{}
	for i := 0; i+1 < len(args); i += 2 {
		opts[args[i]] = args[i+1]
	}
	dir, action := opts["-p"], opts["-a"]
	if dir == "" || !strings.HasPrefix(dir, "/") || dir == "/" {
		fail("volume helper needs an absolute -p folder, got %q", dir)
	}
	if opts["-m"] != "Filesystem" {
		fail("volume mode %q is not supported: local-path volumes are Filesystem", opts["-m"])
	}
	switch action {
	case "create":
		if err := os.MkdirAll(dir, 0o777); err != nil {
			fail("create %s: %v", dir, err)
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			fail("chmod %s: %v", dir, err)
		}
	case "delete":
		if err := os.RemoveAll(dir); err != nil {
			fail("delete %s: %v", dir, err)
		}
	default:
		fail("unknown volume action %q; use create or delete", action)
	}
	fmt.Printf("%s %s\n", action, dir)
}

// serviceAccount is where kubelet mounts a Pod's service account token and the cluster's CA.
const serviceAccount = "/var/run/secrets/kubernetes.io/serviceaccount"

// get fetches a URL; with a service account mounted, HTTPS trusts the cluster CA and sends the token,
// as any in-cluster client of kube-apiserver does.
func get(url string) (*http.Response, error) {
	transport := &http.Transport{}
	if ca, err := os.ReadFile(serviceAccount + "/ca.crt"); err == nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca)
		transport.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if token, err := os.ReadFile(serviceAccount + "/token"); err == nil && strings.HasPrefix(url, "https://") {
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	}
	client := http.Client{Timeout: 10 * time.Second, Transport: transport}
	return client.Do(req)
}

// pause waits for SIGTERM or SIGINT, reaping any child that ends meanwhile (as PID 1 it inherits them).
func pause() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			return
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}

func arg(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}

func number(args []string, i int) int {
	n, err := strconv.Atoi(arg(args, i))
	if err != nil || n < 0 {
		fail("%s: argument %d must be a whole number, got %q", args[0], i, arg(args, i))
	}
	return n
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "tk-workload: "+format+"\n", a...)
	os.Exit(2)
}
