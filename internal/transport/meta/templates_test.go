package meta_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/meta"
	"github.com/switchboard-io/switchboard/internal/transport/meta/metatest"
)

// storedComponents is what the peer stored of a template's components, as JSON.
func storedComponents(t *testing.T, peer *metatest.Server, name string) []byte {
	t.Helper()
	for _, tpl := range peer.Templates(graphWABA) {
		if tpl.Name == name {
			b, _ := json.Marshal(tpl.Components)
			return b
		}
	}
	t.Fatalf("the peer has no template %q", name)
	return nil
}

func TestCreateTemplate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		def  meta.TemplateDef
		want string // the components Meta gets
	}{
		{"utility with every part", meta.TemplateDef{Name: "order_update", Language: "en_US", Category: "utility",
			HeaderType: "text", HeaderText: "Order {{1}}", HeaderExample: "#1234",
			Body: "Hi {{1}}, your order ships {{2}}.", BodyExamples: []string{"Ada", "today"}, Footer: "Acme",
			Buttons: []meta.TemplateButton{
				{Type: "url", Text: "Track", URL: "https://example.com/t/{{1}}", Example: "https://example.com/t/1234"},
				{Type: "phone", Text: "Call us", PhoneNumber: "+15550100"},
				{Type: "quick_reply", Text: "Stop"}}},
			`[{"type":"HEADER","format":"TEXT","text":"Order {{1}}","example":{"header_text":["#1234"]}},
			  {"type":"BODY","text":"Hi {{1}}, your order ships {{2}}.","example":{"body_text":[["Ada","today"]]}},
			  {"type":"FOOTER","text":"Acme"},
			  {"type":"BUTTONS","buttons":[
				{"type":"URL","text":"Track","url":"https://example.com/t/{{1}}","example":["https://example.com/t/1234"]},
				{"type":"PHONE_NUMBER","text":"Call us","phone_number":"+15550100"},
				{"type":"QUICK_REPLY","text":"Stop"}]}]`},
		{"marketing with an image header", meta.TemplateDef{Name: "summer_sale", Language: "en", Category: "MARKETING",
			HeaderType: "image", HeaderExample: "4::aW1hZ2UvcG5n:ARZ", Body: "Sale now on.",
			Buttons: []meta.TemplateButton{{Type: "copy_code", Example: "SUMMER10"}, {Type: "request_contact_info"}}},
			`[{"type":"HEADER","format":"IMAGE","example":{"header_handle":["4::aW1hZ2UvcG5n:ARZ"]}},
			  {"type":"BODY","text":"Sale now on."},
			  {"type":"BUTTONS","buttons":[{"type":"COPY_CODE","example":"SUMMER10"},{"type":"REQUEST_CONTACT_INFO"}]}]`},
		{"authentication, copy code", meta.TemplateDef{Name: "login_code", Language: "en_US", Category: "AUTHENTICATION",
			AddSecurityRecommendation: true, CodeExpirationMinutes: 10},
			`[{"type":"BODY","add_security_recommendation":true},{"type":"FOOTER","code_expiration_minutes":10},
			  {"type":"BUTTONS","buttons":[{"type":"OTP","otp_type":"COPY_CODE"}]}]`},
		{"authentication, one tap", meta.TemplateDef{Name: "login_tap", Language: "en_US", Category: "authentication",
			Buttons: []meta.TemplateButton{{Type: "otp", OTPType: "ONE_TAP", Text: "Copy code", PackageName: "com.example.app", SignatureHash: "K8a/AINcGX7"}}},
			`[{"type":"BODY","add_security_recommendation":false},
			  {"type":"BUTTONS","buttons":[{"type":"OTP","otp_type":"ONE_TAP","text":"Copy code",
				"supported_apps":[{"package_name":"com.example.app","signature_hash":"K8a/AINcGX7"}]}]}]`},
	}
	peer, tr := graphPeer(t, metatest.Options{})
	for _, c := range cases {
		id, status, category, err := tr.CreateTemplate(context.Background(), "", graphWABA, c.def)
		if err != nil || id == "" || status != "PENDING" {
			t.Fatalf("%s: CreateTemplate = %q, %q, %q, %v", c.name, id, status, category, err)
		}
		sameJSON(t, storedComponents(t, peer, c.def.Name), c.want)
	}
	// Meta refuses the same name and language twice.
	_, _, _, err := tr.CreateTemplate(context.Background(), "", graphWABA, cases[0].def)
	if f := transport.AsFailure(err); f == nil || f.Code != meta.CodeInvalidRequest || f.ProviderCode != "100/2388024" {
		t.Fatalf("a second order_update: err = %v", err)
	}
	// What the transport refuses itself.
	for _, d := range []meta.TemplateDef{
		{Name: "x", Language: "en", Category: "UTILITY"},
		{Name: "x", Language: "en", Category: "UTILITY", Body: "b", HeaderType: "video"},
		{Name: "x", Language: "en", Category: "UTILITY", Body: "b", Buttons: []meta.TemplateButton{{Type: "otp"}}},
		{Name: "x", Language: "en", Category: "AUTHENTICATION", Buttons: []meta.TemplateButton{{Type: "otp", OTPType: "ONE_TAP"}}},
		{Name: "x", Language: "en", Category: "AUTHENTICATION", CodeExpirationMinutes: 91},
	} {
		if _, _, _, err := tr.CreateTemplate(context.Background(), "", graphWABA, d); transport.AsFailure(err) == nil {
			t.Errorf("CreateTemplate(%+v): err = %v, want a Failure", d, err)
		}
	}
}

// TestTemplateLifecycle creates a template, sees it through review, sends it with too few and
// the right number of parameters, and deletes it.
func TestTemplateLifecycle(t *testing.T) {
	t.Parallel()
	peer, tr := graphPeer(t, metatest.Options{})
	ctx := context.Background()
	def := meta.TemplateDef{Name: "appointment", Language: "en_US", Category: "UTILITY",
		Body: "Hi {{1}}, see you at {{2}}.", BodyExamples: []string{"Ada", "9:00"}}
	id, _, _, err := tr.CreateTemplate(ctx, "", graphWABA, def)
	if err != nil {
		t.Fatal(err)
	}
	send := func(params ...string) error {
		_, err := tr.Send(ctx, transport.Outbound{Channel: "whatsapp", MessageType: "template", To: "15551234567", From: graphPhoneID,
			Template: &transport.OutboundTemplate{Name: "appointment", Language: "en_US", BodyParams: params}})
		return err
	}
	if f := transport.AsFailure(send("Ada", "9:00")); f == nil || f.Code != meta.CodeTemplateNotFound {
		t.Fatalf("sending a pending template: %v, want TEMPLATE_NOT_FOUND", f)
	}
	peer.SetTemplateStatus(graphWABA, "appointment", "en_US", "APPROVED", "")
	if f := transport.AsFailure(send("Ada")); f == nil || f.Code != meta.CodeTemplateParamsMismatch || f.ProviderCode != "132000" {
		t.Fatalf("sending one parameter of two: %v, want TEMPLATE_PARAMS_MISMATCH", f)
	}
	if err := send("Ada", "9:00"); err != nil {
		t.Fatalf("sending the approved template: %v", err)
	}
	list, err := tr.ListTemplates(ctx, "", graphWABA)
	if err != nil || len(list) != 1 || list[0].ID != id || list[0].Status != "APPROVED" || list[0].Category != "UTILITY" ||
		len(list[0].Components) != 1 || list[0].Components[0].Text != def.Body {
		t.Fatalf("ListTemplates = %+v, %v", list, err)
	}
	if err := tr.DeleteTemplate(ctx, "", graphWABA, "appointment", ""); err != nil {
		t.Fatalf("DeleteTemplate: %v", err)
	}
	if n := len(peer.Templates(graphWABA)); n != 0 {
		t.Fatalf("%d templates left", n)
	}
	if err := tr.DeleteTemplate(ctx, "", graphWABA, "appointment", ""); transport.AsFailure(err) == nil {
		t.Fatalf("deleting it again: err = %v, want a Failure", err)
	}
}

func TestListTemplatesFollowsPages(t *testing.T) {
	t.Parallel()
	peer, tr := graphPeer(t, metatest.Options{PageSize: 2})
	var want []string
	for i := range 5 {
		name := fmt.Sprintf("tpl_%d", i)
		peer.SetTemplateStatus(graphWABA, name, "en", "APPROVED", "MARKETING")
		want = append(want, name)
	}
	list, err := tr.ListTemplates(context.Background(), "", graphWABA)
	if err != nil || len(list) != len(want) {
		t.Fatalf("ListTemplates = %d templates, %v; want %d", len(list), err, len(want))
	}
	for i, tpl := range list {
		if tpl.Name != want[i] || tpl.Status != "APPROVED" {
			t.Fatalf("template %d = %+v, want %s", i, tpl, want[i])
		}
	}
}
