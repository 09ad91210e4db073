package main

// Known data on a volume, for backup and restore tests: `fill` writes files whose bytes follow from their
// names (incompressible, so a backup really carries them), `sums` prints each file's SHA-256, `churn`
// keeps rewriting a file, for a volume that is busy while it is backed up, and `deep` nests folders until
// their path is longer than BYTES (past Linux's PATH_MAX of 4096, no program that opens files by their
// full path can read the deepest ones: a volume whose backup fails).

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"
)

const filledMarker = ".tk-filled"

// fill writes COUNT files of SIZE MiB and one file of BIG MiB into DIR, unless an earlier fill finished
// there (a restored volume keeps what the backup held).
func fill(dir string, count, size, big int) {
	if _, err := os.Stat(filepath.Join(dir, filledMarker)); err == nil {
		fmt.Printf("%s already holds its data\n", dir)
		return
	}
	if err := os.MkdirAll(filepath.Join(dir, "small"), 0o755); err != nil {
		fail("fill: %v", err)
	}
	for i := 0; i < count; i++ {
		writeKnown(filepath.Join(dir, "small", fmt.Sprintf("file-%03d.bin", i)), int64(size)<<20)
	}
	writeKnown(filepath.Join(dir, "large.bin"), int64(big)<<20)
	if err := os.WriteFile(filepath.Join(dir, filledMarker), []byte(time.Now().UTC().Format(time.RFC3339)), 0o644); err != nil {
		fail("fill: %v", err)
	}
	fmt.Printf("filled %s: %d x %d MiB and %d MiB\n", dir, count, size, big)
}

// writeKnown writes `size` bytes derived from the file's name: SHA-256 in counter mode.
func writeKnown(path string, size int64) {
	f, err := os.Create(path)
	if err != nil {
		fail("fill: %v", err)
	}
	seed := sha256.Sum256([]byte(filepath.Base(path)))
	block := make([]byte, 0, 1<<20)
	var counter [8]byte
	for written := int64(0); written < size; {
		block = block[:0]
		for len(block) < cap(block) {
			binary.BigEndian.PutUint64(counter[:], uint64(written)+uint64(len(block)))
			sum := sha256.Sum256(append(seed[:], counter[:]...))
			block = append(block, sum[:]...)
		}
		n := min(int64(len(block)), size-written)
		if _, err := f.Write(block[:n]); err != nil {
			fail("fill: %v", err)
		}
		written += n
	}
	if err := f.Close(); err != nil {
		fail("fill: %v", err)
	}
}

// sums prints "SHA-256  path" for every regular file under DIR, sorted by path, then a total line.
func sums(dir string) {
	var paths []string
	err := filepath.WalkDir(dir, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if entry.Type().IsRegular() {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		fail("sums: %v", err)
	}
	sort.Strings(paths)
	var total int64
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			fail("sums: %v", err)
		}
		h := sha256.New()
		n, err := io.Copy(h, f)
		f.Close()
		if err != nil {
			fail("sums: %v", err)
		}
		total += n
		rel, _ := filepath.Rel(dir, path)
		fmt.Printf("%s  %s\n", hex.EncodeToString(h.Sum(nil)), rel)
	}
	fmt.Printf("%d files, %d bytes\n", len(paths), total)
}

// churn rewrites FILE with a growing counter every few milliseconds until stopped.
func churn(path string) {
	for i := 0; ; i++ {
		if err := os.WriteFile(path, []byte(strconv.Itoa(i)+"\n"), 0o644); err != nil {
			fail("churn: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// deep makes DIR/d/d/d/… until the path from DIR is longer than `length` bytes, one folder at a time
// (a single mkdir of the whole path would fail with ENAMETOOLONG), and leaves a file at the bottom.
func deep(dir string, length int) {
	if err := os.Chdir(dir); err != nil {
		fail("deep: %v", err)
	}
	depth := 0
	for total := 0; total <= length; total += len("/d") {
		if err := os.Mkdir("d", 0o755); err != nil && !os.IsExist(err) {
			fail("deep: at depth %d: %v", depth, err)
		}
		if err := os.Chdir("d"); err != nil {
			fail("deep: at depth %d: %v", depth, err)
		}
		depth++
	}
	if err := os.WriteFile("bottom.txt", []byte("the deepest file\n"), 0o644); err != nil {
		fail("deep: %v", err)
	}
	fmt.Printf("made %d nested folders under %s\n", depth, dir)
}
