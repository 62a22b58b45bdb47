package app_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/regulatory"
)

// upload sends data as contentType to an upload URL (no key) with method.
func upload(in *instance, method, uploadURL, contentType string, data []byte) response {
	in.t.Helper()
	req, err := http.NewRequest(method, uploadURL, bytes.NewReader(data))
	if err != nil {
		in.t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	return in.doRequest(req)
}

// uploadURL asks for an upload URL with key.
func uploadURL(t *testing.T, in *instance, key string) string {
	t.Helper()
	r := in.post("/v1/documents/upload-url", key, ``)
	if r.status != 200 {
		t.Fatalf("upload-url = %d %v", r.status, r.body)
	}
	return r.body["uploadUrl"].(string)
}

// TestRegulatoryAddresses: an address is recorded pending, read, listed a page at a time and
// deleted; bad bodies name their fields and store nothing; keys without full access are refused.
func TestRegulatoryAddresses(t *testing.T) {
	in := start(t)
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	key := newKey(t, in, acme, apikey.Live)
	sender := newKey(t, in, acme, apikey.Live, "messages:send")

	r := in.post("/v1/addresses", key, `{"countryCode":"de","locality":"Berlin","postalCode":"10115","streetAddress":"Invalidenstr. 1","businessName":"Acme GmbH"}`)
	if r.status != 201 {
		t.Fatalf("create = %d %v", r.status, r.body)
	}
	a := r.body["address"].(map[string]any)
	if a["countryCode"] != "DE" || a["status"] != "pending" || a["businessName"] != "Acme GmbH" || a["firstName"] != nil {
		t.Errorf("address = %v", a)
	}
	second := in.post("/v1/addresses", key, `{"countryCode":"GB","locality":"London","postalCode":"SW1A 1AA","streetAddress":"1 Way","firstName":"Ana","lastName":"Lee"}`)
	if second.status != 201 {
		t.Fatalf("second = %d %v", second.status, second.body)
	}
	for _, c := range []struct {
		body  string
		paths []string
	}{
		{`{}`, []string{"countryCode", "locality", "postalCode", "streetAddress", "businessName"}},
		{`{"countryCode":"DEU","locality":"B","postalCode":"1","streetAddress":"S","businessName":"X"}`, []string{"countryCode"}},
		{`{"countryCode":"DE","locality":"B","postalCode":"1","streetAddress":"S","firstName":"Ana"}`, []string{"businessName"}},
		{`{"countryCode":"DE","locality":"` + strings.Repeat("b", 201) + `","postalCode":"1","streetAddress":"S","businessName":"X"}`, []string{"locality"}},
	} {
		r := in.post("/v1/addresses", key, c.body)
		if r.status != 400 || strings.Join(fieldPaths(r), ",") != strings.Join(c.paths, ",") {
			t.Errorf("POST %s = %d %v, want 400 on %v", c.body, r.status, fieldPaths(r), c.paths)
		}
	}
	if n := in.count(`SELECT count(*) FROM regulatory_addresses WHERE project = $1`, acme); n != 2 {
		t.Errorf("%d addresses stored, want 2", n)
	}
	if r := in.post("/v1/addresses", sender, `{"countryCode":"DE","locality":"B","postalCode":"1","streetAddress":"S","businessName":"X"}`); r.status != 403 {
		t.Errorf("a messages:send key = %d", r.status)
	}
	if r := in.get("/v1/addresses", sender); r.status != 403 {
		t.Errorf("a messages:send key lists = %d", r.status)
	}

	page := in.get("/v1/addresses?limit=1", key)
	items := page.body["items"].([]any)
	if page.status != 200 || len(items) != 1 || items[0].(map[string]any)["countryCode"] != "GB" || page.body["nextCursor"] == nil {
		t.Fatalf("first page = %d %v", page.status, page.body)
	}
	next := in.get("/v1/addresses?limit=1&cursor="+page.body["nextCursor"].(string), key)
	if items := next.body["items"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != a["id"] {
		t.Errorf("second page = %v", next.body)
	}
	if got := in.get("/v1/addresses/"+a["id"].(string), key); got.status != 200 || got.body["address"].(map[string]any)["locality"] != "Berlin" {
		t.Errorf("GET = %d %v", got.status, got.body)
	}
	if r := in.delete("/v1/addresses/"+a["id"].(string), key); r.status != 204 {
		t.Errorf("DELETE = %d %v", r.status, r.body)
	}
	if r := in.get("/v1/addresses/"+a["id"].(string), key); r.status != 404 || r.body["code"] != "not_found" {
		t.Errorf("GET deleted = %d %v", r.status, r.body)
	}
	// An address a bundle used is in use.
	in.exec(`UPDATE regulatory_addresses SET provider_sid = 'AD0123' WHERE project = $1`, acme)
	if r := in.delete("/v1/addresses/"+second.body["address"].(map[string]any)["id"].(string), key); r.status != 409 {
		t.Errorf("DELETE in use = %d %v", r.status, r.body)
	}
}

// TestRegulatoryDocuments: a file goes to a one-time upload URL (no key; POST or PUT), is kept
// in chunks, and becomes a document; an upload URL used twice or late, a file of the wrong type,
// empty or too large, and a document whose storageId, size or type do not match are refused and
// store nothing.
func TestRegulatoryDocuments(t *testing.T) {
	in := start(t)
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	other := newProject(t, in, v1alpha1.ProjectSpec{})
	key := newKey(t, in, acme, apikey.Live)
	otherKey := newKey(t, in, other, apikey.Live)

	u := uploadURL(t, in, key)
	if !strings.HasPrefix(u, in.url+"/v1/documents/uploads/") {
		t.Fatalf("upload URL %s", u)
	}
	// A file of a type not taken leaves the URL unused.
	if r := upload(in, "POST", u, "text/plain", []byte("hello")); r.status != 400 {
		t.Errorf("a text file = %d %v", r.status, r.body)
	}
	if r := upload(in, "POST", u, "application/pdf", nil); r.status != 400 {
		t.Errorf("an empty file = %d %v", r.status, r.body)
	}
	pdf := append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("x"), 2<<20+512)...) // three chunks
	r := upload(in, "PUT", u, "application/pdf", pdf)
	if r.status != 200 || r.body["storageId"] == nil {
		t.Fatalf("upload = %d %v", r.status, r.body)
	}
	storage := r.body["storageId"].(string)
	if r := upload(in, "POST", u, "application/pdf", pdf); r.status != 400 || !strings.Contains(r.body["message"].(string), "used already") {
		t.Errorf("an upload URL used twice = %d %v", r.status, r.body)
	}
	var stored []byte
	if err := in.poolRow(`SELECT string_agg(data, ''::bytea ORDER BY seq) FROM regulatory_file_chunks WHERE upload = $1`, storage).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(stored) != sha256.Sum256(pdf) || in.count(`SELECT count(*) FROM regulatory_file_chunks WHERE upload = $1`, storage) != 3 {
		t.Errorf("stored %d bytes in %d chunks", len(stored), in.count(`SELECT count(*) FROM regulatory_file_chunks WHERE upload = $1`, storage))
	}

	late := uploadURL(t, in, key)
	in.exec(`UPDATE regulatory_uploads SET expires_at = now() - interval '1 second' WHERE uploaded_at IS NULL AND project = $1`, acme)
	if r := upload(in, "POST", late, "image/png", []byte("png")); r.status != 400 || !strings.Contains(r.body["message"].(string), "expired") {
		t.Errorf("a late upload = %d %v", r.status, r.body)
	}
	if r := upload(in, "POST", uploadURL(t, in, key), "image/jpeg", make([]byte, 10<<20+1)); r.status != 413 {
		t.Errorf("a file over 10 MiB = %d %v", r.status, r.body)
	}
	if r := upload(in, "POST", in.url+"/v1/documents/uploads/not-a-token", "image/png", []byte("png")); r.status != 400 {
		t.Errorf("an unknown token = %d %v", r.status, r.body)
	}

	size := len(pdf)
	body := func(storageID string, size int, mime string) string {
		return `{"documentType":"business_registration","name":"Register excerpt","fileSize":` + strconv.Itoa(size) + `,"mimeType":"` + mime + `","storageId":"` + storageID + `"}`
	}
	for _, c := range []struct {
		key, body string
		paths     []string
	}{
		{key, body(storage, size+1, "application/pdf"), []string{"fileSize"}},
		{key, body(storage, size, "image/png"), []string{"mimeType"}},
		{otherKey, body(storage, size, "application/pdf"), []string{"storageId"}},
		{key, `{"documentType":"selfie","name":"","storageId":""}`, []string{"documentType", "name", "mimeType", "fileSize", "storageId"}},
	} {
		if r := in.post("/v1/documents", c.key, c.body); r.status != 400 || strings.Join(fieldPaths(r), ",") != strings.Join(c.paths, ",") {
			t.Errorf("POST %s = %d %v, want 400 on %v", c.body, r.status, fieldPaths(r), c.paths)
		}
	}
	r = in.post("/v1/documents", key, body(storage, size, "application/pdf"))
	if r.status != 201 {
		t.Fatalf("create = %d %v", r.status, r.body)
	}
	doc := r.body["document"].(map[string]any)
	if doc["status"] != "uploaded" || doc["fileSize"] != float64(size) || doc["mimeType"] != "application/pdf" || doc["rejectionReason"] != nil {
		t.Errorf("document = %v", doc)
	}
	if r := in.post("/v1/documents", key, body(storage, size, "application/pdf")); r.status != 400 || fieldPaths(r)[0] != "storageId" {
		t.Errorf("a second document of one file = %d %v", r.status, r.body)
	}
	if n := in.count(`SELECT count(*) FROM regulatory_documents WHERE project = $1`, acme); n != 1 {
		t.Errorf("%d documents, want 1", n)
	}
	id := doc["id"].(string)
	if items := in.get("/v1/documents", key).body["items"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != id {
		t.Errorf("list = %v", items)
	}
	if r := in.get("/v1/documents/"+id, otherKey); r.status != 404 {
		t.Errorf("another project reads it: %d", r.status)
	}
	// A verified document stays; another goes with its file.
	in.exec(`UPDATE regulatory_documents SET status = 'verified' WHERE id = $1`, id)
	if r := in.delete("/v1/documents/"+id, key); r.status != 409 {
		t.Errorf("DELETE verified = %d %v", r.status, r.body)
	}
	in.exec(`UPDATE regulatory_documents SET status = 'rejected', rejection_reason = 'unreadable' WHERE id = $1`, id)
	if got := in.get("/v1/documents/"+id, key).body["document"].(map[string]any); got["rejectionReason"] != "unreadable" {
		t.Errorf("rejected document = %v", got)
	}
	if r := in.delete("/v1/documents/"+id, key); r.status != 204 {
		t.Errorf("DELETE = %d %v", r.status, r.body)
	}
	if n := in.count(`SELECT count(*) FROM regulatory_file_chunks WHERE upload = $1`, storage); n != 0 {
		t.Errorf("%d chunks left of a deleted document", n)
	}
}

// TestRegulatoryDocumentsInS3: with --document-store an S3 bucket (a loopback S3 server), the
// upload keeps the file as an object (nothing in Postgres), the document reads it back, and
// deleting the document deletes the object.
func TestRegulatoryDocumentsInS3(t *testing.T) {
	backend := s3mem.New()
	if err := backend.CreateBucket("docs"); err != nil {
		t.Fatal(err)
	}
	s3 := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(s3.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", "switchboard")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "switchboard-secret")
	store, err := regulatory.OpenS3("s3://docs/switchboard?endpoint=" + strings.TrimPrefix(s3.URL, "http://") + "&insecure=true&region=us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	in := start(t, func(c *app.Config) { c.DocumentStore = store })
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	key := newKey(t, in, acme, apikey.Live)

	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte("p"), 3000)...)
	r := upload(in, "POST", uploadURL(t, in, key), "image/png", png)
	if r.status != 200 {
		t.Fatalf("upload = %d %v", r.status, r.body)
	}
	storage := r.body["storageId"].(string)
	if n := in.count(`SELECT count(*) FROM regulatory_file_chunks WHERE upload = $1`, storage); n != 0 {
		t.Errorf("%d chunks in Postgres with an S3 store", n)
	}
	ctx := context.Background()
	if got, err := store.Get(ctx, storage); err != nil || !bytes.Equal(got, png) {
		t.Fatalf("the object = %d bytes, %v", len(got), err)
	}
	d := in.post("/v1/documents", key, `{"documentType":"national_id","name":"ID","fileSize":`+strconv.Itoa(len(png))+`,"mimeType":"image/png","storageId":"`+storage+`"}`)
	if d.status != 201 {
		t.Fatalf("document = %d %v", d.status, d.body)
	}
	id := d.body["document"].(map[string]any)["id"].(string)
	svc := &regulatory.Service{Pool: in.db, Files: store}
	if got, err := svc.File(ctx, acme, id); err != nil || !bytes.Equal(got, png) {
		t.Errorf("the document's file = %d bytes, %v", len(got), err)
	}
	if r := in.delete("/v1/documents/"+id, key); r.status != 204 {
		t.Fatalf("DELETE = %d %v", r.status, r.body)
	}
	if _, err := store.Get(ctx, storage); err == nil {
		t.Error("the object outlived its document")
	}
}
