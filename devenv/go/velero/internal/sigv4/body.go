package sigv4

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// hashCheck passes a body through and fails its last read when the body's SHA-256 is not the signed one.
type hashCheck struct {
	body io.ReadCloser
	want string
	hash hash.Hash
}

func newHashCheck(body io.ReadCloser, want string) io.ReadCloser {
	return &hashCheck{body: body, want: strings.ToLower(want), hash: sha256.New()}
}

func (h *hashCheck) Read(p []byte) (int, error) {
	n, err := h.body.Read(p)
	h.hash.Write(p[:n])
	if errors.Is(err, io.EOF) && hex.EncodeToString(h.hash.Sum(nil)) != h.want {
		return n, refuse(http.StatusBadRequest, "XAmzContentSHA256Mismatch",
			"The provided 'x-amz-content-sha256' header does not match what was computed.")
	}
	return n, err
}

func (h *hashCheck) Close() error { return h.body.Close() }

// chunkSigning is what a streaming body's chunks are checked against.
type chunkSigning struct {
	signed, trailer bool
	key             []byte
	amzDate, scope  string
	// The signature the next chunk's chains from: the request's (seed) signature at first.
	previousSig string
}

// chunkReader decodes an aws-chunked body: `<hex size>[;chunk-signature=<sig>]\r\n<data>\r\n` per chunk,
// a last chunk of size 0, then trailer headers (with x-amz-trailer-signature when signed). Each chunk's
// signature is checked once the chunk is read; a bad one fails the read that ends the chunk.
type chunkReader struct {
	body      io.ReadCloser
	in        *bufio.Reader
	signing   chunkSigning
	remaining int64 // bytes left in the current chunk
	chunkSig  string
	chunkHash hash.Hash
	total     int64
	declared  int64
	err       error
}

func newChunkReader(body io.ReadCloser, signing chunkSigning, declared int64) io.ReadCloser {
	return &chunkReader{body: body, in: bufio.NewReader(body), signing: signing, declared: declared, remaining: -1}
}

func (c *chunkReader) Close() error { return c.body.Close() }

func malformed(format string, args ...any) error {
	return refuse(http.StatusBadRequest, "IncompleteBody", "malformed aws-chunked body: "+format, args...)
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if c.remaining <= 0 {
		if c.remaining == 0 {
			if err := c.endChunk(); err != nil {
				c.err = err
				return 0, err
			}
		}
		if err := c.startChunk(); err != nil {
			c.err = err
			return 0, err
		}
	}
	if int64(len(p)) > c.remaining {
		p = p[:c.remaining]
	}
	n, err := c.in.Read(p)
	c.chunkHash.Write(p[:n])
	c.remaining -= int64(n)
	c.total += int64(n)
	if errors.Is(err, io.EOF) && c.remaining > 0 {
		err = malformed("the body ended inside a chunk")
	}
	if err != nil && !errors.Is(err, io.EOF) {
		c.err = err
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

// endChunk reads the CRLF after a chunk's data and checks the chunk's signature.
func (c *chunkReader) endChunk() error {
	crlf := make([]byte, 2)
	if _, err := io.ReadFull(c.in, crlf); err != nil || string(crlf) != "\r\n" {
		return malformed("a chunk's data is not followed by CRLF")
	}
	return c.checkChunk()
}

func (c *chunkReader) checkChunk() error {
	if !c.signing.signed {
		return nil
	}
	toSign := "AWS4-HMAC-SHA256-PAYLOAD\n" + c.signing.amzDate + "\n" + c.signing.scope + "\n" +
		c.signing.previousSig + "\n" + emptySHA256 + "\n" + hex.EncodeToString(c.chunkHash.Sum(nil))
	return c.chain(toSign, c.chunkSig, "chunk")
}

func (c *chunkReader) chain(toSign, got, what string) error {
	want := hex.EncodeToString(hmacSHA256(c.signing.key, toSign))
	if !hmac.Equal([]byte(want), []byte(got)) {
		return refuse(http.StatusForbidden, "SignatureDoesNotMatch",
			"the signature of a %s of the streaming body does not match", what)
	}
	c.signing.previousSig = want
	return nil
}

// startChunk reads a chunk header; at the last chunk it checks it and the trailer, and returns io.EOF.
func (c *chunkReader) startChunk() error {
	line, err := c.in.ReadString('\n')
	if err != nil {
		return malformed("a chunk header is cut short")
	}
	line = strings.TrimRight(line, "\r\n")
	sizeHex, ext, _ := strings.Cut(line, ";")
	size, err := strconv.ParseInt(sizeHex, 16, 64)
	if err != nil || size < 0 {
		return malformed("chunk size %q", sizeHex)
	}
	c.chunkSig = ""
	if sig, ok := strings.CutPrefix(ext, "chunk-signature="); ok {
		c.chunkSig = sig
	}
	if c.signing.signed && c.chunkSig == "" {
		return refuse(http.StatusForbidden, "SignatureDoesNotMatch", "a chunk of a signed streaming body has no chunk-signature")
	}
	c.chunkHash = sha256.New()
	if c.total+size > c.declared {
		return malformed("the chunks hold more than x-amz-decoded-content-length (%d) bytes", c.declared)
	}
	if size > 0 {
		c.remaining = size
		return nil
	}
	if err := c.checkChunk(); err != nil {
		return err
	}
	if c.total != c.declared {
		return malformed("the chunks hold %d bytes, x-amz-decoded-content-length says %d", c.total, c.declared)
	}
	if err := c.readTrailer(); err != nil {
		return err
	}
	return io.EOF
}

// readTrailer reads what follows the last chunk: nothing but CRLF, or trailer headers (each ended by LF
// or CRLF, as clients differ) and, when signed, x-amz-trailer-signature over them.
func (c *chunkReader) readTrailer() error {
	rest, err := io.ReadAll(io.LimitReader(c.in, 16<<10))
	if err != nil {
		return malformed("reading the trailer: %v", err)
	}
	var canonical strings.Builder
	signature := ""
	for _, line := range strings.Split(string(rest), "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return malformed("trailer line %q", line)
		}
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "x-amz-trailer-signature" {
			signature = strings.TrimSpace(value)
			continue
		}
		fmt.Fprintf(&canonical, "%s:%s\n", name, strings.TrimSpace(value))
	}
	if !c.signing.signed || !c.signing.trailer {
		return nil
	}
	if signature == "" {
		return refuse(http.StatusForbidden, "SignatureDoesNotMatch", "the signed trailer has no x-amz-trailer-signature")
	}
	toSign := "AWS4-HMAC-SHA256-TRAILER\n" + c.signing.amzDate + "\n" + c.signing.scope + "\n" +
		c.signing.previousSig + "\n" + sha256Hex([]byte(canonical.String()))
	return c.chain(toSign, signature, "trailer")
}
