// Command tk-image builds a single-layer container image from local files and writes it as a docker
// archive that containerd imports (`ctr images import`). The same inputs give the same digest: file
// times, owners and the image's creation time are fixed, and entries are written in a fixed order.
//
//	tk-image --tag tenantkit.local/workload:abc --out image.tar --entrypoint /tk-workload \
//	  --file /path/to/tk-workload=/tk-workload
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type files map[string]string // path in the image -> path on this machine

func (f files) String() string { return fmt.Sprint(map[string]string(f)) }
func (f files) Set(v string) error {
	source, target, ok := strings.Cut(v, "=")
	if !ok || !strings.HasPrefix(target, "/") {
		return fmt.Errorf("--file wants SOURCE=/path/in/image, got %q", v)
	}
	f[path.Clean(target)] = source
	return nil
}

func main() {
	content := files{}
	tag := flag.String("tag", "", "image reference, e.g. tenantkit.local/workload:1")
	out := flag.String("out", "", "docker archive to write")
	entrypoint := flag.String("entrypoint", "", "entrypoint (one path)")
	user := flag.String("user", "65532:65532", "user the image runs as")
	flag.Var(content, "file", "SOURCE=/path/in/image (repeatable; files are written mode 0755)")
	flag.Parse()
	if *tag == "" || *out == "" || len(content) == 0 {
		fmt.Fprintln(os.Stderr, "tk-image: --tag, --out and at least one --file are required")
		os.Exit(2)
	}
	if err := build(*tag, *out, *entrypoint, *user, content); err != nil {
		fmt.Fprintf(os.Stderr, "tk-image: %v\n", err)
		os.Exit(1)
	}
}

func build(tag, out, entrypoint, user string, content files) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	layerTar, err := layer(content)
	if err != nil {
		return err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config = v1.Config{User: user, Env: []string{"PATH=/"}}
	if entrypoint != "" {
		cfg.Config.Entrypoint = []string{entrypoint}
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(out, ref, img); err != nil {
		return err
	}
	fmt.Printf("%s@%s\n", ref.Name(), digest)
	return nil
}

// layer is an uncompressed tar of the files (and their parent directories), in path order, with fixed
// times and root ownership.
func layer(content files) ([]byte, error) {
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	targets := make([]string, 0, len(content))
	for target := range content {
		targets = append(targets, target)
	}
	sort.Strings(targets)
	written := map[string]bool{}
	for _, target := range targets {
		for _, dir := range parents(target) {
			if written[dir] {
				continue
			}
			written[dir] = true
			if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir[1:] + "/", Mode: 0o755, Format: tar.FormatPAX}); err != nil {
				return nil, err
			}
		}
		data, err := os.ReadFile(content[target])
		if err != nil {
			return nil, err
		}
		if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: target[1:], Mode: 0o755, Size: int64(len(data)), Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := w.Write(data); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// parents lists the directories above an absolute path, outermost first ("/a/b/c" -> "/a", "/a/b").
func parents(p string) []string {
	var dirs []string
	for d := path.Dir(p); d != "/"; d = path.Dir(d) {
		dirs = append([]string{d}, dirs...)
	}
	return dirs
}
