// Command tk-image builds a container image from local files and writes it as a docker archive that
// containerd imports (`ctr images import`). The same inputs give the same digest: file times and owners
// and the image's creation time are fixed, entries are written in path order, and modes are normalised
// (0755 for directories and executables, 0644 for other files).
//
// Content flags are read in order; --layer starts a new layer:
//
//	tk-image --tag tenantkit.local/tenantkit:abc --out image.tar \
//	  --file /usr/bin/node=/usr/local/bin/node --layer \
//	  --dir ./src=/app/src --mkdir /tmp=1777 \
//	  --workdir /app --entrypoint node --entrypoint src/cli/main.ts
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// entry is one path in a layer: a file or symlink copied from this machine, or a directory.
type entry struct {
	source string // file on this machine ("" for a directory)
	link   string // symlink target
	mode   int64
	dir    bool
}

type layers struct{ list []map[string]entry }

func (l *layers) current() map[string]entry {
	if len(l.list) == 0 {
		l.newLayer()
	}
	return l.list[len(l.list)-1]
}

func (l *layers) newLayer() { l.list = append(l.list, map[string]entry{}) }

func splitMapping(v, flagName string) (string, string, error) {
	source, target, ok := strings.Cut(v, "=")
	if !ok || !strings.HasPrefix(target, "/") {
		return "", "", fmt.Errorf("--%s wants SOURCE=/path/in/image, got %q", flagName, v)
	}
	return source, path.Clean(target), nil
}

func (l *layers) addFile(v string) error {
	source, target, err := splitMapping(v, "file")
	if err != nil {
		return err
	}
	info, err := os.Stat(source)
	if err != nil {
		return err
	}
	l.current()[target] = entry{source: source, mode: fileMode(info.Mode())}
	return nil
}

// addDir copies a tree; symlinks stay symlinks, other special files are refused.
func (l *layers) addDir(v string) error {
	source, target, err := splitMapping(v, "dir")
	if err != nil {
		return err
	}
	layer := l.current()
	return filepath.WalkDir(source, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(source, p)
		if err != nil {
			return err
		}
		at := path.Join(target, filepath.ToSlash(rel))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			layer[at] = entry{dir: true, mode: 0o755}
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			layer[at] = entry{link: link, mode: 0o777}
		case info.Mode().IsRegular():
			layer[at] = entry{source: p, mode: fileMode(info.Mode())}
		default:
			return fmt.Errorf("%s: not a file, directory or symlink", p)
		}
		return nil
	})
}

// addMkdir makes an empty directory, e.g. /tmp=1777.
func (l *layers) addMkdir(v string) error {
	target, modeText, _ := strings.Cut(v, "=")
	mode := int64(0o755)
	if modeText != "" {
		m, err := strconv.ParseInt(modeText, 8, 32)
		if err != nil {
			return fmt.Errorf("--mkdir %q: mode must be octal", v)
		}
		mode = m
	}
	if !strings.HasPrefix(target, "/") {
		return fmt.Errorf("--mkdir wants /path[=MODE], got %q", v)
	}
	l.current()[path.Clean(target)] = entry{dir: true, mode: mode}
	return nil
}

func fileMode(m fs.FileMode) int64 {
	if m&0o111 != 0 {
		return 0o755
	}
	return 0o644
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, " ") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	var content layers
	var entrypoint, cmd, env stringList
	tag := flag.String("tag", "", "image reference, e.g. tenantkit.local/workload:1")
	out := flag.String("out", "", "docker archive to write")
	user := flag.String("user", "65532:65532", "user the image runs as")
	workdir := flag.String("workdir", "", "working directory")
	flag.Var(&entrypoint, "entrypoint", "one word of the entrypoint (repeatable, in order)")
	flag.Var(&cmd, "cmd", "one word of the default arguments (repeatable, in order)")
	flag.Var(&env, "env", "KEY=VALUE in the image's environment (repeatable; PATH defaults to /usr/local/bin:/usr/bin:/bin:/)")
	flag.Func("file", "SOURCE=/path/in/image: one file (repeatable)", content.addFile)
	flag.Func("dir", "SOURCE=/path/in/image: a directory tree (repeatable)", content.addDir)
	flag.Func("mkdir", "/path[=MODE]: an empty directory, mode in octal (repeatable)", content.addMkdir)
	flag.BoolFunc("layer", "start a new layer for the content flags that follow", func(string) error {
		content.newLayer()
		return nil
	})
	flag.Parse()
	if *tag == "" || *out == "" || len(content.list) == 0 {
		fmt.Fprintln(os.Stderr, "tk-image: --tag, --out and at least one --file, --dir or --mkdir are required")
		os.Exit(2)
	}
	config := v1.Config{User: *user, WorkingDir: *workdir, Entrypoint: entrypoint, Cmd: cmd, Env: withPath(env)}
	if err := build(*tag, *out, config, content.list); err != nil {
		fmt.Fprintf(os.Stderr, "tk-image: %v\n", err)
		os.Exit(1)
	}
}

func withPath(env []string) []string {
	for _, e := range env {
		if strings.HasPrefix(e, "PATH=") {
			return env
		}
	}
	return append([]string{"PATH=/usr/local/bin:/usr/bin:/bin:/"}, env...)
}

func build(tag, out string, config v1.Config, contents []map[string]entry) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	img := empty.Image
	for _, content := range contents {
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
		if img, err = mutate.AppendLayers(img, l); err != nil {
			return err
		}
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config = config
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

// layer is an uncompressed tar of the entries (and their parent directories), in path order, with fixed
// times and root ownership.
func layer(content map[string]entry) ([]byte, error) {
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
			if written[dir] || content[dir].dir {
				continue
			}
			written[dir] = true
			if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir[1:] + "/", Mode: 0o755, Format: tar.FormatPAX}); err != nil {
				return nil, err
			}
		}
		if target == "/" || written[target] {
			continue
		}
		written[target] = true
		if err := writeEntry(w, target, content[target]); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeEntry(w *tar.Writer, target string, e entry) error {
	header := &tar.Header{Name: target[1:], Mode: e.mode, Format: tar.FormatPAX}
	switch {
	case e.dir:
		header.Typeflag, header.Name = tar.TypeDir, header.Name+"/"
		return w.WriteHeader(header)
	case e.link != "":
		header.Typeflag, header.Linkname = tar.TypeSymlink, e.link
		return w.WriteHeader(header)
	}
	data, err := os.ReadFile(e.source)
	if err != nil {
		return err
	}
	header.Typeflag, header.Size = tar.TypeReg, int64(len(data))
	if err := w.WriteHeader(header); err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// parents lists the directories above an absolute path, outermost first ("/a/b/c" -> "/a", "/a/b").
func parents(p string) []string {
	var dirs []string
	for d := path.Dir(p); d != "/"; d = path.Dir(d) {
		dirs = append([]string{d}, dirs...)
	}
	return dirs
}
