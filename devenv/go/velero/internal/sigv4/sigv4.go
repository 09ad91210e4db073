// Package sigv4 checks AWS Signature Version 4 on requests to the test S3 server (cmd/s3server), so
// that the store answers only those who hold its credentials: Velero, kopia and tenantkit's tests, not
// any Pod that reaches its port. It verifies what S3 clients send: an Authorization header over a hex
// SHA-256 payload hash or UNSIGNED-PAYLOAD, streaming chunked payloads (STREAMING-AWS4-HMAC-SHA256-PAYLOAD,
// with or without a signed trailer, and STREAMING-UNSIGNED-PAYLOAD-TRAILER) and presigned URLs (query
// parameters, as Velero's download requests hand out). A refusal is an S3 XML error (403 AccessDenied,
// InvalidAccessKeyId, SignatureDoesNotMatch, RequestTimeTooSkewed; 400 for a malformed request).
package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	algorithm  = "AWS4-HMAC-SHA256"
	timeFormat = "20060102T150405Z"
	// The payload hashes that are not a hex SHA-256 of the body.
	unsignedPayload        = "UNSIGNED-PAYLOAD"
	streamingPayload       = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	streamingPayloadSigned = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
	streamingUnsigned      = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
	emptySHA256            = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// Verifier holds the credentials the store accepts.
type Verifier struct {
	// Secret returns the secret access key of an access key id, false for an unknown one.
	Secret func(accessKey string) (string, bool)
	// Now is the server's clock (time.Now when nil); MaxSkew the allowed difference of a request's
	// X-Amz-Date (15 minutes when zero, as S3).
	Now     func() time.Time
	MaxSkew time.Duration
	// Log, when set, receives the reason of every refusal (with the canonical request on a mismatch).
	Log *log.Logger
}

// Refusal is an S3 error answer.
type Refusal struct {
	Status  int
	Code    string
	Message string
	// On SignatureDoesNotMatch, what the server signed (S3 returns these too), to debug a client.
	StringToSign     string
	CanonicalRequest string
}

// Keys is a fixed set of keys for Verifier.Secret: access key id to secret access key.
func Keys(keys map[string]string) func(string) (string, bool) {
	return func(id string) (string, bool) {
		secret, ok := keys[id]
		return secret, ok
	}
}

func (r *Refusal) Error() string { return fmt.Sprintf("%s: %s", r.Code, r.Message) }

func refuse(status int, code, format string, args ...any) *Refusal {
	return &Refusal{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns a handler that passes only correctly signed requests to next. A streaming body reaches
// next decoded (its chunk signatures checked as it is read), with Content-Length set to the decoded
// length, aws-chunked gone from Content-Encoding and x-amz-content-sha256 set to UNSIGNED-PAYLOAD.
func (v *Verifier) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refusal := v.Verify(r); refusal != nil {
			if v.Log != nil {
				v.Log.Printf("sigv4: %s %s refused: %s: %s", r.Method, r.URL.Path, refusal.Code, refusal.Message)
				if refusal.CanonicalRequest != "" {
					v.Log.Printf("sigv4: canonical request was:\n%s", refusal.CanonicalRequest)
				}
			}
			WriteError(w, r, refusal)
			return
		}
		next.ServeHTTP(w, r)
	})
}

type errorBody struct {
	XMLName          xml.Name `xml:"Error"`
	Code             string
	Message          string
	Resource         string
	StringToSign     string `xml:",omitempty"`
	CanonicalRequest string `xml:",omitempty"`
}

// WriteError answers with an S3 XML error (no body for HEAD).
func WriteError(w http.ResponseWriter, r *http.Request, refusal *Refusal) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(refusal.Status)
	if r.Method == http.MethodHead {
		return
	}
	body, _ := xml.Marshal(errorBody{
		Code:             refusal.Code,
		Message:          refusal.Message,
		Resource:         r.URL.Path,
		StringToSign:     refusal.StringToSign,
		CanonicalRequest: refusal.CanonicalRequest,
	})
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(body)
}

// scope is a request's credential scope (date/region/service/aws4_request) and its key.
type scope struct {
	accessKey, date, region, service string
}

func (s scope) String() string { return s.date + "/" + s.region + "/" + s.service + "/aws4_request" }

// signed is what a request claims: its scope, time, signed headers, payload hash and signature.
type signed struct {
	scope         scope
	amzDate       string
	time          time.Time
	signedHeaders []string
	payloadHash   string
	signature     string
	presigned     bool
}

// Verify checks r's signature; on success it may replace r.Body (see Wrap). nil means allowed.
func (v *Verifier) Verify(r *http.Request) *Refusal {
	var claim *signed
	var refusal *Refusal
	switch {
	case r.Header.Get("Authorization") != "":
		claim, refusal = parseHeader(r)
	case r.URL.Query().Get("X-Amz-Algorithm") != "":
		claim, refusal = parseQuery(r)
	default:
		return refuse(http.StatusForbidden, "AccessDenied",
			"Access Denied: anonymous requests are refused; sign the request with AWS Signature Version 4 and the store's credentials")
	}
	if refusal != nil {
		return refusal
	}
	secret, ok := v.Secret(claim.scope.accessKey)
	if !ok {
		return refuse(http.StatusForbidden, "InvalidAccessKeyId",
			"The AWS Access Key Id you provided does not exist in our records.")
	}
	if claim.scope.service != "s3" {
		return refuse(http.StatusBadRequest, "AuthorizationHeaderMalformed",
			"the credential scope names service %q; this store is s3", claim.scope.service)
	}
	if claim.time.Format("20060102") != claim.scope.date {
		return refuse(http.StatusBadRequest, "AuthorizationHeaderMalformed",
			"the credential scope's date %s is not the day of X-Amz-Date %s", claim.scope.date, claim.amzDate)
	}
	now := time.Now()
	if v.Now != nil {
		now = v.Now()
	}
	if claim.presigned {
		expires, err := strconv.Atoi(r.URL.Query().Get("X-Amz-Expires"))
		if err != nil || expires < 1 || expires > 7*24*3600 {
			return refuse(http.StatusBadRequest, "AuthorizationQueryParametersError",
				"X-Amz-Expires must be a number of seconds between 1 and 604800")
		}
		if now.After(claim.time.Add(time.Duration(expires) * time.Second)) {
			return refuse(http.StatusForbidden, "AccessDenied", "Request has expired")
		}
		if claim.time.After(now.Add(v.skew())) {
			return refuse(http.StatusForbidden, "AccessDenied", "Request is not valid yet")
		}
	} else if d := now.Sub(claim.time); d > v.skew() || d < -v.skew() {
		return refuse(http.StatusForbidden, "RequestTimeTooSkewed",
			"The difference between the request time (%s) and the server's time (%s) is too large.",
			claim.time.Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	canonical := CanonicalRequest(r, claim.signedHeaders, claim.payloadHash, claim.presigned)
	toSign := StringToSign(claim.amzDate, claim.scope.String(), canonical)
	key := SigningKey(secret, claim.scope.date, claim.scope.region, claim.scope.service)
	want := hex.EncodeToString(hmacSHA256(key, toSign))
	if !hmac.Equal([]byte(want), []byte(claim.signature)) {
		refusal := refuse(http.StatusForbidden, "SignatureDoesNotMatch",
			"The request signature we calculated does not match the signature you provided. Check your key and signing method.")
		refusal.StringToSign, refusal.CanonicalRequest = toSign, canonical
		return refusal
	}
	return v.checkBody(r, claim, key)
}

func (v *Verifier) skew() time.Duration {
	if v.MaxSkew > 0 {
		return v.MaxSkew
	}
	return 15 * time.Minute
}

// checkBody makes the body verify itself as it is read.
func (v *Verifier) checkBody(r *http.Request, claim *signed, key []byte) *Refusal {
	switch hash := claim.payloadHash; hash {
	case unsignedPayload:
		return nil
	case streamingPayload, streamingPayloadSigned, streamingUnsigned:
		if claim.presigned {
			return refuse(http.StatusBadRequest, "InvalidArgument", "a presigned request cannot stream a chunked payload")
		}
		decoded, err := strconv.ParseInt(r.Header.Get("X-Amz-Decoded-Content-Length"), 10, 64)
		if err != nil || decoded < 0 {
			return refuse(http.StatusLengthRequired, "MissingContentLength",
				"a streaming upload needs x-amz-decoded-content-length")
		}
		r.Body = newChunkReader(r.Body, chunkSigning{
			signed:      hash != streamingUnsigned,
			trailer:     hash != streamingPayload,
			key:         key,
			amzDate:     claim.amzDate,
			scope:       claim.scope.String(),
			previousSig: claim.signature,
		}, decoded)
		r.ContentLength = decoded
		r.Header.Set("Content-Length", strconv.FormatInt(decoded, 10))
		r.Header.Set("X-Amz-Content-Sha256", unsignedPayload)
		r.Header.Del("X-Amz-Decoded-Content-Length")
		var encodings []string
		for _, e := range strings.Split(r.Header.Get("Content-Encoding"), ",") {
			if e = strings.TrimSpace(e); e != "" && e != "aws-chunked" {
				encodings = append(encodings, e)
			}
		}
		if len(encodings) == 0 {
			r.Header.Del("Content-Encoding")
		} else {
			r.Header.Set("Content-Encoding", strings.Join(encodings, ","))
		}
		return nil
	default:
		if _, err := hex.DecodeString(hash); err != nil || len(hash) != 64 {
			return refuse(http.StatusBadRequest, "InvalidArgument",
				"x-amz-content-sha256 must be the hex SHA-256 of the body, UNSIGNED-PAYLOAD or a STREAMING-* value, not %q", hash)
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = newHashCheck(r.Body, hash)
		} else if hash != emptySHA256 {
			return refuse(http.StatusBadRequest, "XAmzContentSHA256Mismatch",
				"The provided 'x-amz-content-sha256' header does not match what was computed.")
		}
		return nil
	}
}

func parseHeader(r *http.Request) (*signed, *Refusal) {
	header := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(header, algorithm+" ")
	if !ok {
		return nil, refuse(http.StatusBadRequest, "AuthorizationHeaderMalformed",
			"only AWS Signature Version 4 (%s) is accepted", algorithm)
	}
	fields := map[string]string{}
	for _, part := range strings.Split(rest, ",") {
		name, value, found := strings.Cut(strings.TrimSpace(part), "=")
		if !found {
			return nil, refuse(http.StatusBadRequest, "AuthorizationHeaderMalformed", "malformed field %q", part)
		}
		fields[name] = value
	}
	claim := &signed{signature: fields["Signature"], payloadHash: r.Header.Get("X-Amz-Content-Sha256")}
	if refusal := claim.fill(fields["Credential"], fields["SignedHeaders"], r.Header.Get("X-Amz-Date")); refusal != nil {
		return nil, refusal
	}
	if claim.payloadHash == "" {
		return nil, refuse(http.StatusBadRequest, "InvalidRequest", "missing required header for this request: x-amz-content-sha256")
	}
	for _, required := range []string{"x-amz-content-sha256", "x-amz-date"} {
		if !contains(claim.signedHeaders, required) {
			return nil, refuse(http.StatusBadRequest, "AuthorizationHeaderMalformed", "SignedHeaders must include %s", required)
		}
	}
	return claim, nil
}

func parseQuery(r *http.Request) (*signed, *Refusal) {
	q := r.URL.Query()
	if q.Get("X-Amz-Algorithm") != algorithm {
		return nil, refuse(http.StatusBadRequest, "AuthorizationQueryParametersError",
			"X-Amz-Algorithm must be %s", algorithm)
	}
	claim := &signed{signature: q.Get("X-Amz-Signature"), payloadHash: unsignedPayload, presigned: true}
	if hash := q.Get("X-Amz-Content-Sha256"); hash != "" {
		claim.payloadHash = hash
	}
	if refusal := claim.fill(q.Get("X-Amz-Credential"), q.Get("X-Amz-SignedHeaders"), q.Get("X-Amz-Date")); refusal != nil {
		return nil, refusal
	}
	return claim, nil
}

// fill parses the credential, signed headers and date shared by both forms.
func (s *signed) fill(credential, signedHeaders, amzDate string) *Refusal {
	parts := strings.Split(credential, "/")
	if len(parts) != 5 || parts[4] != "aws4_request" || parts[0] == "" {
		return refuse(http.StatusBadRequest, "AuthorizationHeaderMalformed",
			"the Credential must be <access key>/<date>/<region>/s3/aws4_request, not %q", credential)
	}
	s.scope = scope{accessKey: parts[0], date: parts[1], region: parts[2], service: parts[3]}
	if signedHeaders == "" || s.signature == "" {
		return refuse(http.StatusBadRequest, "AuthorizationHeaderMalformed", "SignedHeaders and Signature are required")
	}
	s.signedHeaders = strings.Split(signedHeaders, ";")
	if !contains(s.signedHeaders, "host") {
		return refuse(http.StatusBadRequest, "AuthorizationHeaderMalformed", "SignedHeaders must include host")
	}
	t, err := time.Parse(timeFormat, amzDate)
	if err != nil {
		return refuse(http.StatusBadRequest, "AuthorizationHeaderMalformed",
			"X-Amz-Date must be an ISO 8601 basic time (20060102T150405Z), not %q", amzDate)
	}
	s.amzDate, s.time = amzDate, t
	return nil
}

func contains(list []string, s string) bool {
	for _, item := range list {
		if item == s {
			return true
		}
	}
	return false
}

// CanonicalRequest is SigV4's canonical form of r for S3 (the path encoded once, not normalized).
func CanonicalRequest(r *http.Request, signedHeaders []string, payloadHash string, presigned bool) string {
	var b strings.Builder
	b.WriteString(r.Method + "\n")
	path := r.URL.Path
	if path == "" {
		path = "/"
	}
	b.WriteString(encode(path, false) + "\n")
	b.WriteString(canonicalQuery(r.URL.RawQuery, presigned) + "\n")
	for _, name := range signedHeaders {
		b.WriteString(name + ":" + headerValue(r, name) + "\n")
	}
	b.WriteString("\n" + strings.Join(signedHeaders, ";") + "\n")
	b.WriteString(payloadHash)
	return b.String()
}

func headerValue(r *http.Request, name string) string {
	var values []string
	switch name {
	case "host":
		values = []string{r.Host}
	case "transfer-encoding":
		values = r.TransferEncoding
	case "content-length":
		values = r.Header.Values("Content-Length")
		if len(values) == 0 && r.ContentLength >= 0 {
			values = []string{strconv.FormatInt(r.ContentLength, 10)}
		}
	default:
		values = r.Header.Values(name)
	}
	for i, value := range values {
		values[i] = strings.Join(strings.Fields(value), " ")
	}
	return strings.Join(values, ",")
}

func canonicalQuery(raw string, presigned bool) string {
	type pair struct{ key, value string }
	var pairs []pair
	for _, part := range strings.Split(raw, "&") {
		if part == "" {
			continue
		}
		key, value, _ := strings.Cut(part, "=")
		k, err1 := url.PathUnescape(key)
		v, err2 := url.PathUnescape(value)
		if err1 != nil || err2 != nil {
			k, v = key, value
		}
		if presigned && k == "X-Amz-Signature" {
			continue
		}
		pairs = append(pairs, pair{encode(k, true), encode(v, true)})
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].key != pairs[j].key {
			return pairs[i].key < pairs[j].key
		}
		return pairs[i].value < pairs[j].value
	})
	parts := make([]string, len(pairs))
	for i, p := range pairs {
		parts[i] = p.key + "=" + p.value
	}
	return strings.Join(parts, "&")
}

// encode is SigV4's URI encoding: every byte but A-Z a-z 0-9 - _ . ~ as %XX (and '/' too when slash).
func encode(s string, slash bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
			b.WriteByte(c)
		case c == '/' && !slash:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// StringToSign is SigV4's string to sign for a canonical request.
func StringToSign(amzDate, scope, canonicalRequest string) string {
	return algorithm + "\n" + amzDate + "\n" + scope + "\n" + sha256Hex([]byte(canonicalRequest))
}

// SigningKey derives SigV4's signing key from a secret access key.
func SigningKey(secret, date, region, service string) []byte {
	key := hmacSHA256([]byte("AWS4"+secret), date)
	key = hmacSHA256(key, region)
	key = hmacSHA256(key, service)
	return hmacSHA256(key, "aws4_request")
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
