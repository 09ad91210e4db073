// Command s3server is a small S3-compatible server (gofakes3 with its filesystem backend) that stands
// in for AWS S3 or MinIO as Velero's object store in tests and `tenantkit dev`. It speaks plain HTTP on
// loopback and keeps objects in a directory, so a restart finds the same buckets. Every request must be
// signed (AWS Signature Version 4, internal/sigv4) with a key of --credentials-file: the store holds every
// tenant's backups, and any Pod of the cluster may reach its port.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3afero"
	"github.com/tenantkit/tenantkit/devenv/go/velero/internal/parent"
	"github.com/tenantkit/tenantkit/devenv/go/velero/internal/sigv4"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9000", "address to serve S3 on (plain HTTP)")
	dir := flag.String("dir", "", "directory that holds the buckets and object metadata (created if missing)")
	buckets := flag.String("bucket", "", "comma-separated buckets to create at start if they do not exist")
	credentials := flag.String("credentials-file", "",
		"AWS shared credentials file (aws_access_key_id, aws_secret_access_key per profile): the keys that may use the store")
	verbose := flag.Bool("verbose", false, "log every request, not only warnings and errors")
	flag.Parse()
	keys, err := newKeyFile(*credentials)
	if err != nil {
		log.Fatalf("s3server: %v", err)
	}
	if err := run(*listen, *dir, *buckets, keys.secret, *verbose); err != nil {
		log.Fatalf("s3server: %v", err)
	}
}

// keyFile is --credentials-file, read again when it changed (tests add keys for tenants' locations).
type keyFile struct {
	path    string
	mu      sync.Mutex
	modTime time.Time
	size    int64
	keys    map[string]string
}

func newKeyFile(path string) (*keyFile, error) {
	f := &keyFile{path: path}
	if path == "" {
		return nil, errors.New("--credentials-file is required: the store answers signed requests only")
	}
	if err := f.reload(); err != nil {
		return nil, err
	}
	if len(f.keys) == 0 {
		return nil, fmt.Errorf("%s holds no aws_access_key_id with its aws_secret_access_key", path)
	}
	return f, nil
}

func (f *keyFile) reload() error {
	info, err := os.Stat(f.path)
	if err != nil {
		return err
	}
	if info.ModTime().Equal(f.modTime) && info.Size() == f.size && f.keys != nil {
		return nil
	}
	keys, err := readCredentials(f.path)
	if err != nil {
		return err
	}
	f.keys, f.modTime, f.size = keys, info.ModTime(), info.Size()
	return nil
}

// secret is sigv4.Verifier's Secret; a file that cannot be read keeps the keys read last.
func (f *keyFile) secret(id string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.reload(); err != nil {
		log.Printf("s3server: reading %s: %v (keeping the keys read before)", f.path, err)
	}
	secret, ok := f.keys[id]
	return secret, ok
}

// readCredentials reads the keys of every profile of an AWS shared credentials file.
func readCredentials(path string) (map[string]string, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	keys := map[string]string{}
	var id, secret string
	flush := func() {
		if id != "" && secret != "" {
			keys[id] = secret
		}
		id, secret = "", ""
	}
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if strings.HasPrefix(line, "[") {
			flush()
			continue
		}
		name, value, _ := strings.Cut(line, "=")
		switch strings.TrimSpace(name) {
		case "aws_access_key_id":
			id = strings.TrimSpace(value)
		case "aws_secret_access_key":
			secret = strings.TrimSpace(value)
		}
	}
	flush()
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	return keys, nil
}

func run(listen, dir, buckets string, secret func(string) (string, bool), verbose bool) error {
	if dir == "" {
		return errors.New("--dir is required")
	}
	fs, err := s3afero.FsPath(dir, s3afero.FsPathCreateAll)
	if err != nil {
		return err
	}
	backend, err := s3afero.MultiBucket(fs)
	if err != nil {
		return err
	}
	for _, bucket := range strings.Split(buckets, ",") {
		if bucket = strings.TrimSpace(bucket); bucket == "" {
			continue
		}
		exists, err := backend.BucketExists(bucket)
		if err != nil {
			return err
		}
		if !exists {
			if err := backend.CreateBucket(bucket); err != nil {
				return fmt.Errorf("create bucket %s: %v", bucket, err)
			}
		}
	}
	levels := []gofakes3.LogLevel{gofakes3.LogErr, gofakes3.LogWarn}
	if verbose {
		levels = append(levels, gofakes3.LogInfo)
	}
	faker := gofakes3.New(store{backend}, gofakes3.WithLogger(gofakes3.GlobalLog(levels...)))

	listener, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	verifier := &sigv4.Verifier{Secret: secret, Log: log.Default()}
	server := &http.Server{Handler: closeOnFailedWrite(verifier.Wrap(faker.Server())), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- server.Serve(listener) }()
	log.Printf("s3server: serving http://%s from %s", listener.Addr(), dir)

	orphaned := make(chan struct{})
	parent.OnExit(func() { close(orphaned) })
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case err := <-served:
		return err
	case <-orphaned:
		log.Print("s3server: parent process exited, stopping")
	case s := <-sig:
		log.Printf("s3server: %s received, stopping", s)
	}
	return server.Close()
}

// store fixes two ways the filesystem backend differs from S3:
//   - it answers a listing under a prefix with no objects yet (no directory) with NoSuchBucket, where S3
//     returns an empty list (Velero then calls a new storage location with an empty prefix Unavailable
//     until something is written there);
//   - a PUT that fails part way (the disk full) leaves the object's partial file without its metadata,
//     and from then on every listing that reaches it fails (500) and nothing under that prefix can be
//     deleted; in S3 a failed PUT leaves no object.
type store struct {
	gofakes3.Backend
}

// PutObject removes whatever a failed write left of the object: data and metadata both. (The
// backend truncates an existing object before it writes, so an overwrite that fails cannot keep the old
// version either; removing the object is the only state a listing can answer.)
func (b store) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64, conditions *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	result, err := b.Backend.PutObject(bucket, key, meta, input, size, conditions)
	if err != nil && !gofakes3.HasErrorCode(err, gofakes3.ErrNoSuchBucket) && !gofakes3.HasErrorCode(err, gofakes3.ErrPreconditionFailed) {
		if _, cleanupErr := b.Backend.DeleteObject(bucket, key); cleanupErr != nil {
			log.Printf("s3server: could not remove what a failed PUT of %s/%s left: %v", bucket, key, cleanupErr)
		}
	}
	return result, err
}

func (b store) ListBucket(name string, prefix *gofakes3.Prefix, page gofakes3.ListBucketPage) (*gofakes3.ObjectList, error) {
	list, err := b.Backend.ListBucket(name, prefix, page)
	if gofakes3.HasErrorCode(err, gofakes3.ErrNoSuchBucket) && prefix != nil && prefix.HasPrefix {
		if exists, existsErr := b.BucketExists(name); existsErr == nil && exists {
			return gofakes3.NewObjectList(), nil
		}
	}
	return list, err
}

// closeOnFailedWrite ends the connection after a PUT or POST answered with an error: the backend may have
// stopped reading the request's body part way (a full disk), and a client that sends its next request on
// the same connection would have the body's leftover bytes read as that request's headers (431).
func closeOnFailedWrite(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut || r.Method == http.MethodPost {
			w = &closingWriter{ResponseWriter: w}
		}
		next.ServeHTTP(w, r)
	})
}

type closingWriter struct{ http.ResponseWriter }

func (c *closingWriter) WriteHeader(status int) {
	if status >= 400 {
		c.Header().Set("Connection", "close")
	}
	c.ResponseWriter.WriteHeader(status)
}
