package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
)

// templateEvents lists the template.status_changed deliveries of the project's v2 webhook as
// "previous→current category".
func templateEvents(in *instance, project string) []string {
	rows, err := in.db.Query(context.Background(), `SELECT data->>'previousStatus', data->>'currentStatus', coalesce(data->>'category', '')
		FROM webhook_deliveries WHERE project = $1 AND event = 'template.status_changed' AND endpoint_kind = 'project_v2' ORDER BY created_at, id`, project)
	if err != nil {
		in.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var prev, cur, cat string
		if err := rows.Scan(&prev, &cur, &cat); err != nil {
			in.t.Fatal(err)
		}
		out = append(out, prev+"→"+cur+" "+cat)
	}
	return out
}

// approvedTemplate makes the template "greeting" in en ("Hi {{1}}", Telegram "Hey {{1}}!") in
// key's project and has the sandbox approve it (key is a test key); it returns its id.
func approvedTemplate(t *testing.T, in *instance, key string) string {
	t.Helper()
	r := in.post("/v1/templates", key, `{"name":"greeting","language":"en","body":"Hi {{1}}","variables":["Ada"],"telegramBody":"Hey {{1}}!"}`)
	if r.status != 201 {
		t.Fatalf("create template = %d %v", r.status, r.body)
	}
	id := r.body["id"].(string)
	var sender string
	for _, s := range in.get("/v1/senders", key).body["items"].([]any) {
		sender = s.(map[string]any)["id"].(string)
	}
	if r := in.post("/v1/templates/"+id+"/submit", key, `{"senderId":"`+sender+`"}`); r.status != 200 {
		t.Fatalf("submit template = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool { return in.get("/v1/templates/"+id, key).body["status"] == "approved" })
	return id
}

func TestTemplatesThroughTheAPIAndTheSandbox(t *testing.T) {
	in := start(t)
	acme, key := sendingProject(t, in, nil, apikey.Test)
	if r := in.do("PUT", "/v2/webhook", key, strings.NewReader(`{"url":"https://hooks.acme.example/v2","events":["template.status_changed"]}`)); r.status != 201 && r.status != 200 {
		t.Fatalf("webhook = %d %v", r.status, r.body)
	}

	// Bad input: the spec's 400 naming the field, and nothing made.
	for body, path := range map[string]string{
		`{"language":"en","body":"Hi"}`:                                    "name",
		`{"name":"Order Update","language":"en","body":"Hi"}`:              "name",
		`{"name":"order","language":"english","body":"Hi"}`:                "language",
		`{"name":"order","language":"en","body":"Hi {{1}} {{3}}"}`:         "body",
		`{"name":"order","language":"en","body":"Hi","headerContent":"x"}`: "headerContent",
		`{"name":"order","language":"en","body":"Hi","buttons":[{"type":"quick_reply","text":"a"},{"type":"quick_reply","text":"b"},{"type":"quick_reply","text":"c"},{"type":"quick_reply","text":"d"}]}`: "buttons",
		`{"name":"order","language":"en","body":"Hi","buttons":[{"type":"url","text":"Go","url":"ftp://x"}]}`:                                                                                              "buttons[0].url",
		`{"name":"order","language":"en","body":"Hi","buttons":[{"type":"otp","otpType":"COPY_CODE"}]}`:                                                                                                    "buttons[0].type",
		`{"name":"order","language":"en","body":"Hi","whatsappCategory":"PROMO"}`:                                                                                                                          "whatsappCategory",
	} {
		r := in.post("/v1/templates", key, body)
		errs := fieldErrors(r)
		if r.status != 400 || len(errs) == 0 || errs[0].(map[string]any)["path"] != path {
			t.Errorf("%s = %d %v, want 400 on %s", body, r.status, r.body, path)
		}
	}
	var list v1alpha1.TemplateList
	if err := in.k8s.List(context.Background(), &list, client.InNamespace(acme)); err != nil || len(list.Items) != 0 {
		t.Fatalf("bad input made %d templates (%v)", len(list.Items), err)
	}

	// A draft, then a second of the same name and language: 409.
	create := `{"name":"order_update","language":"en_US","body":"Hi {{1}}, order {{2}} ships today","variables":["Ada","#42"],` +
		`"whatsappCategory":"UTILITY","headerType":"text","headerContent":"Your order","footer":"Acme",` +
		`"buttons":[{"type":"url","text":"Track","url":"https://acme.example/t/{{1}}","example":"https://acme.example/t/42"}],"smsBody":"Order {{2}} ships"}`
	r := in.post("/v1/templates", key, create)
	if r.status != 201 || r.body["id"] != "order-update.en-us" || r.body["status"] != "draft" || r.body["category"] != "UTILITY" {
		t.Fatalf("create = %d %v", r.status, r.body)
	}
	if r := in.post("/v2/templates", key, create); r.status != 409 || r.body["code"] != "template_exists" {
		t.Fatalf("second create = %d %v", r.status, r.body)
	}
	// kubectl meets the same rule: a Template named otherwise is refused.
	err := in.k8s.Create(context.Background(), &v1alpha1.Template{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "another-name"},
		Spec: v1alpha1.TemplateSpec{Name: "order_update", Language: "en_US", Body: "x"}})
	if err == nil || !strings.Contains(err.Error(), "name and language identify it") {
		t.Fatalf("kubectl create of a duplicate: %v", err)
	}

	// Before approval, WhatsApp refuses it; SMS renders it already.
	send := func(content string, channel string) response {
		return in.post("/v1/messages", key, `{"to":"+15005550100","channel":"`+channel+`","messageType":"template","content":`+content+`}`)
	}
	full := `{"templateId":"order-update.en-us","templateVariables":{"1":"Ada","2":"#42"},"templateButtonVariables":{"0":"42"}}`
	if r := send(full, "whatsapp"); r.status != 400 || r.body["code"] != "template_not_approved" {
		t.Fatalf("send before approval = %d %v", r.status, r.body)
	}
	r = send(`{"templateId":"order-update.en-us","templateVariables":{"1":"Ada","2":"#42"}}`, "sms")
	if m := r.body["message"].(map[string]any); r.status != 200 || m["text"] != "Order #42 ships" || m["messageType"] != "text" {
		t.Fatalf("sms template = %d %v", r.status, r.body)
	}

	// Submitted with a test key: the sandbox reviews it; pending, then approved, each announced once.
	r = in.post("/v1/templates/order-update.en-us/submit", key, `{"senderId":"main"}`)
	if r.status != 200 || r.body["status"] != "pending" {
		t.Fatalf("submit = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool { return in.get("/v1/templates/order-update.en-us", key).body["status"] == "approved" })
	waitFor(t, func() bool { return len(templateEvents(in, acme)) == 2 })
	if got := fmt.Sprint(templateEvents(in, acme)); got != "[draft→pending UTILITY pending→approved UTILITY]" {
		t.Fatalf("events = %s", got)
	}

	// Approved: WhatsApp sends it, with exactly the variables it takes.
	r = send(full, "whatsapp")
	if r.status != 200 {
		t.Fatalf("send = %d %v", r.status, r.body)
	}
	waitStatus(t, in, key, r.body["message"].(map[string]any)["id"].(string), "delivered")
	for content, path := range map[string]string{
		`{"templateId":"order-update.en-us","templateVariables":{"1":"Ada"},"templateButtonVariables":{"0":"42"}}`:                                               "content.templateVariables",
		`{"templateId":"order-update.en-us","templateVariables":{"1":"Ada","2":"#42","3":"x"},"templateButtonVariables":{"0":"42"}}`:                             "content.templateVariables",
		`{"templateId":"order-update.en-us","templateVariables":{"1":"Ada","2":"#42"}}`:                                                                          "content.templateButtonVariables",
		`{"templateId":"order-update.en-us","templateVariables":{"1":"Ada","2":"#42"},"templateButtonVariables":{"0":"42"},"templateHeaderVariables":{"1":"x"}}`: "content.templateHeaderVariables",
		`{"templateId":"nothing.en","templateVariables":{}}`:                                                                                                     "content.templateId",
	} {
		r := send(content, "whatsapp")
		if errs := fieldErrors(r); r.status != 400 || len(errs) == 0 || errs[0].(map[string]any)["path"] != path {
			t.Errorf("%s = %d %v, want 400 on %s", content, r.status, r.body, path)
		}
	}

	// A name the sandbox rejects; submitted through v2 with the sender's address.
	r = in.post("/v2/templates", key, `{"name":"test_reject_promo","language":"en","body":"Sale!","whatsappCategory":"MARKETING"}`)
	if r.status != 201 {
		t.Fatalf("create = %d %v", r.status, r.body)
	}
	if r := in.post("/v2/templates/test-reject-promo.en/submit", key, `{}`); r.status != 400 {
		t.Fatalf("v2 submit without from = %d %v", r.status, r.body)
	}
	if r := in.post("/v2/templates/test-reject-promo.en/submit", key, `{"from":"+15005550006"}`); r.status != 200 || r.body["status"] != "pending" {
		t.Fatalf("v2 submit = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool {
		r := in.get("/v2/templates/test-reject-promo.en", key)
		return r.body["status"] == "rejected" && strings.Contains(fmt.Sprint(r.body["rejectionReason"]), "test_reject")
	})

	// A template of another project, or none: 404.
	other := newKey(t, in, newProject(t, in, v1alpha1.ProjectSpec{}), apikey.Test)
	if r := in.get("/v1/templates/order-update.en-us", other); r.status != 404 {
		t.Fatalf("another project's template = %d", r.status)
	}
	if r := in.post("/v1/templates/nothing.en/submit", key, `{"senderId":"main"}`); r.status != 404 {
		t.Fatalf("submit of no template = %d", r.status)
	}

	// The list pages; delete removes.
	r = in.get("/v1/templates?limit=1", key)
	if items := r.body["items"].([]any); r.status != 200 || len(items) != 1 || r.body["nextCursor"] == "" {
		t.Fatalf("list = %d %v", r.status, r.body)
	}
	if r := in.do("DELETE", "/v1/templates/test-reject-promo.en", key, nil); r.status != 204 {
		t.Fatalf("delete = %d", r.status)
	}
	waitFor(t, func() bool { return in.get("/v1/templates/test-reject-promo.en", key).status == 404 })
}
