package sigv4

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"
)

// The example key of AWS's Signature Version 4 documentation.
const (
	exampleKey    = "AKIAIOSFODNN7EXAMPLE"
	exampleSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
)

func at(s string) func() time.Time {
	t, _ := time.Parse(timeFormat, s)
	return func() time.Time { return t }
}

// AWS's "GET Object" example (Authenticating Requests: Using the Authorization Header).
func TestGetObjectExampleOfAWS(t *testing.T) {
	v := &Verifier{Secret: Keys(map[string]string{exampleKey: exampleSecret}), Now: at("20130524T000000Z")}
	r := httptest.NewRequest("GET", "http://examplebucket.s3.amazonaws.com/test.txt", nil)
	r.Header.Set("Range", "bytes=0-9")
	r.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	r.Header.Set("X-Amz-Date", "20130524T000000Z")
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
	if refusal := v.Verify(r); refusal != nil {
		t.Fatalf("refused: %v\n%s", refusal, refusal.CanonicalRequest)
	}
	r.Header.Set("Range", "bytes=0-10")
	if refusal := v.Verify(r); refusal == nil || refusal.Code != "SignatureDoesNotMatch" {
		t.Fatalf("a changed signed header: %v", refusal)
	}
}

// AWS's chunked upload example (Signature Calculations for the Authorization Header: Transferring
// Payload in Multiple Chunks): 66560 bytes of 'a' in chunks of 64 KiB and 1 KiB.
func chunkedExample(lastSig string) *http.Request {
	var body bytes.Buffer
	body.WriteString("10000;chunk-signature=ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648\r\n")
	body.Write(bytes.Repeat([]byte("a"), 65536))
	body.WriteString("\r\n400;chunk-signature=0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497\r\n")
	body.Write(bytes.Repeat([]byte("a"), 1024))
	body.WriteString("\r\n0;chunk-signature=" + lastSig + "\r\n\r\n")
	r := httptest.NewRequest("PUT", "http://s3.amazonaws.com/examplebucket/chunkObject.txt", &body)
	r.Header.Set("X-Amz-Date", "20130524T000000Z")
	r.Header.Set("X-Amz-Storage-Class", "REDUCED_REDUNDANCY")
	r.Header.Set("X-Amz-Content-Sha256", streamingPayload)
	r.Header.Set("Content-Encoding", "aws-chunked")
	r.Header.Set("X-Amz-Decoded-Content-Length", "66560")
	r.Header.Set("Content-Length", "66824")
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9")
	return r
}

func TestChunkedUploadExampleOfAWS(t *testing.T) {
	v := &Verifier{Secret: Keys(map[string]string{exampleKey: exampleSecret}), Now: at("20130524T000000Z")}
	r := chunkedExample("b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9")
	if refusal := v.Verify(r); refusal != nil {
		t.Fatalf("refused: %v\n%s", refusal, refusal.CanonicalRequest)
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	if len(data) != 66560 || strings.Trim(string(data), "a") != "" || r.Header.Get("Content-Length") != "66560" {
		t.Fatalf("decoded %d bytes, Content-Length %s", len(data), r.Header.Get("Content-Length"))
	}

	r = chunkedExample(strings.Repeat("0", 64))
	if refusal := v.Verify(r); refusal != nil {
		t.Fatalf("refused: %v", refusal)
	}
	if _, err := io.ReadAll(r.Body); err == nil || !strings.Contains(err.Error(), "SignatureDoesNotMatch") {
		t.Fatalf("a wrong last chunk signature was read without error: %v", err)
	}
}

func TestRefusals(t *testing.T) {
	v := &Verifier{Secret: Keys(map[string]string{exampleKey: exampleSecret}), Now: at("20130524T000000Z")}
	unsigned := httptest.NewRequest("GET", "http://examplebucket.s3.amazonaws.com/test.txt", nil)
	if refusal := v.Verify(unsigned); refusal == nil || refusal.Code != "AccessDenied" || refusal.Status != 403 {
		t.Fatalf("unsigned: %v", refusal)
	}
	late := &Verifier{Secret: v.Secret, Now: at("20130524T003000Z")}
	r := httptest.NewRequest("GET", "http://examplebucket.s3.amazonaws.com/test.txt", nil)
	r.Header.Set("Range", "bytes=0-9")
	r.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	r.Header.Set("X-Amz-Date", "20130524T000000Z")
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
	if refusal := late.Verify(r); refusal == nil || refusal.Code != "RequestTimeTooSkewed" {
		t.Fatalf("replayed 30 minutes later: %v", refusal)
	}
	other := &Verifier{Secret: Keys(map[string]string{"someone": exampleSecret}), Now: v.Now}
	if refusal := other.Verify(r); refusal == nil || refusal.Code != "InvalidAccessKeyId" {
		t.Fatalf("unknown key: %v", refusal)
	}
	wrong := &Verifier{Secret: Keys(map[string]string{exampleKey: "not-the-secret"}), Now: v.Now}
	if refusal := wrong.Verify(r); refusal == nil || refusal.Code != "SignatureDoesNotMatch" {
		t.Fatalf("other secret: %v", refusal)
	}
	rec := httptest.NewRecorder()
	WriteError(rec, r, wrong.Verify(r))
	if rec.Code != 403 || !strings.Contains(rec.Body.String(), "<Code>SignatureDoesNotMatch</Code>") {
		t.Fatalf("answer %d %s", rec.Code, rec.Body.String())
	}
}

// A store as cmd/s3server serves it (in memory here), behind the verifier, with bucket "velero". seen
// collects the kinds of payload hash the client sent (a hex hash as "sha256").
func store(t *testing.T, secret string) (endpoint string, seen map[string]bool) {
	backend := s3mem.New()
	if err := backend.CreateBucket("velero"); err != nil {
		t.Fatal(err)
	}
	faker := gofakes3.New(backend)
	verified := (&Verifier{Secret: Keys(map[string]string{"tenantkit": secret})}).Wrap(faker.Server())
	seen = map[string]bool{}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hash := r.Header.Get("X-Amz-Content-Sha256")
		if len(hash) == 64 {
			hash = "sha256"
		}
		if r.Method == "PUT" {
			seen[hash] = true
		}
		verified.ServeHTTP(w, r)
	}))
	t.Cleanup(server.Close)
	return server.URL, seen
}

// What Velero's AWS plugin sends: aws-sdk-go-v2's S3 client and upload manager (multipart above 5 MiB).
func TestAWSSDKClient(t *testing.T) {
	endpoint, seen := store(t, "right")
	client := func(secret string) *s3.Client {
		return s3.New(s3.Options{
			Region:       "minio",
			BaseEndpoint: aws.String(endpoint),
			UsePathStyle: true,
			Credentials:  credentials.NewStaticCredentialsProvider("tenantkit", secret, ""),
		})
	}
	ctx := context.Background()
	good := client("right")
	body := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	if _, err := good.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("velero"), Key: aws.String("backups/a b+c/x.tar.gz"), Body: bytes.NewReader(body)}); err != nil {
		t.Fatalf("PutObject: %v", err)
	}
	big := bytes.Repeat([]byte("z"), 11<<20)
	uploader := manager.NewUploader(good, func(u *manager.Uploader) { u.PartSize = 5 << 20 })
	if _, err := uploader.Upload(ctx, &s3.PutObjectInput{Bucket: aws.String("velero"), Key: aws.String("kopia/p1"), Body: bytes.NewReader(big)}); err != nil {
		t.Fatalf("multipart upload: %v", err)
	}
	got, err := good.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("velero"), Key: aws.String("kopia/p1")})
	if err != nil {
		t.Fatalf("GetObject: %v", err)
	}
	data, _ := io.ReadAll(got.Body)
	if !bytes.Equal(data, big) {
		t.Fatalf("read back %d bytes, wrote %d", len(data), len(big))
	}
	list, err := good.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("velero"), Prefix: aws.String("backups/")})
	if err != nil || len(list.Contents) != 1 || *list.Contents[0].Key != "backups/a b+c/x.tar.gz" {
		t.Fatalf("ListObjectsV2: %v %v", list, err)
	}
	presigned, err := s3.NewPresignClient(good).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("velero"), Key: aws.String("backups/a b+c/x.tar.gz")})
	if err != nil {
		t.Fatal(err)
	}
	response, err := http.Get(presigned.URL)
	if err != nil || response.StatusCode != 200 {
		t.Fatalf("presigned GET (as Velero's download requests): %v %v", response.Status, err)
	}
	response.Body.Close()
	tampered := strings.Replace(presigned.URL, "x.tar.gz", "y.tar.gz", 1)
	if response, _ := http.Get(tampered); response.StatusCode != 403 {
		t.Fatalf("presigned URL for another key: %s", response.Status)
	}

	if _, err := client("wrong").ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("velero")}); err == nil || !strings.Contains(err.Error(), "SignatureDoesNotMatch") {
		t.Fatalf("wrong secret: %v", err)
	}
	anonymous := s3.New(s3.Options{Region: "minio", BaseEndpoint: aws.String(endpoint), UsePathStyle: true, Credentials: aws.AnonymousCredentials{}})
	if _, err := anonymous.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("velero")}); err == nil || !strings.Contains(err.Error(), "AccessDenied") {
		t.Fatalf("anonymous: %v", err)
	}
	// Over plain HTTP the SDK signs the body's hash (UNSIGNED-PAYLOAD and trailers are for TLS).
	if !seen["sha256"] {
		t.Fatalf("uploads sent %v", seen)
	}
}

// What kopia (Velero's file-system backups) sends: minio-go, which streams signed chunks over plain
// HTTP (with a signed checksum trailer) and uploads big objects in parts.
func TestMinioClient(t *testing.T) {
	url, seen := store(t, "right")
	endpoint := strings.TrimPrefix(url, "http://")
	ctx := context.Background()
	for _, trailing := range []bool{false, true} {
		client, err := minio.New(endpoint, &minio.Options{
			Creds:           miniocreds.NewStaticV4("tenantkit", "right", ""),
			Region:          "minio",
			TrailingHeaders: trailing,
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range []int{0, 100, 70 << 10, 17 << 20} {
			data := bytes.Repeat([]byte{byte(size)}, size)
			// As kopia's S3 storage puts its blobs (repo/blob/s3/s3_storage.go), or in parts.
			opts := minio.PutObjectOptions{ContentType: "application/x-kopia", DisableMultipart: true, SendContentMd5: true}
			if size > 16<<20 {
				opts = minio.PutObjectOptions{PartSize: 5 << 20}
			}
			if trailing {
				opts.AutoChecksum = minio.ChecksumCRC32C
			}
			if _, err := client.PutObject(ctx, "velero", "kopia/blob", bytes.NewReader(data), int64(size), opts); err != nil {
				t.Fatalf("PutObject %d bytes (trailing %v): %v", size, trailing, err)
			}
			object, err := client.GetObject(ctx, "velero", "kopia/blob", minio.GetObjectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			back, err := io.ReadAll(object)
			if err != nil || !bytes.Equal(back, data) {
				t.Fatalf("read back %d bytes of %d: %v", len(back), size, err)
			}
		}
	}
	wrong, _ := minio.New(endpoint, &minio.Options{Creds: miniocreds.NewStaticV4("tenantkit", "wrong", ""), Region: "minio"})
	if _, err := wrong.PutObject(ctx, "velero", "kopia/x", bytes.NewReader([]byte("x")), 1, minio.PutObjectOptions{}); err == nil || minio.ToErrorResponse(err).Code != "SignatureDoesNotMatch" {
		t.Fatalf("wrong secret: %v", err)
	}
	if !seen[streamingPayload] || !seen[streamingPayloadSigned] {
		t.Fatalf("uploads sent %v, not both kinds of signed chunks", seen)
	}
	t.Logf("payloads: %v", seen)
}
