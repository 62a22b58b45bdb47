package agent

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/optional"
)

func paths(errs []apperror.FieldError) []string {
	out := []string{}
	for _, e := range errs {
		out = append(out, e.Path)
	}
	return out
}

func TestCheckParameters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw  string
		want []string
	}{
		{`{"type":"object","properties":{},"required":[]}`, []string{}},
		{`{"type":"object","properties":{"orderNumber":{"type":"string","description":"the order"}},"required":["orderNumber"]}`, []string{}},
		{`[]`, []string{"parameters"}},
		{`"object"`, []string{"parameters"}},
		{`{}`, []string{"parameters.type", "parameters.properties", "parameters.required"}},
		{`{"type":"array","properties":{},"required":[]}`, []string{"parameters.type"}},
		{`{"type":"object","properties":[],"required":[]}`, []string{"parameters.properties"}},
		{`{"type":"object","properties":{"a":"string","b":{}},"required":[]}`, []string{"parameters.properties.a"}},
		{`{"type":"object","properties":{},"required":[1]}`, []string{"parameters.required"}},
		{`{"type":"object","properties":{},"required":null}`, []string{"parameters.required"}},
		{`{"type":"object","properties":{"x":{"description":"` + strings.Repeat("a", MaxToolParameters) + `"}},"required":[]}`, []string{"parameters"}},
	} {
		if got := paths(checkParameters(json.RawMessage(tc.raw))); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("checkParameters(%.60s) = %v, want %v", tc.raw, got, tc.want)
		}
	}
}

func TestCheckToolURL(t *testing.T) {
	t.Parallel()
	strict := delivery.ClientOptions{}
	loopback := delivery.ClientOptions{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, AllowHTTPLoopback: true}
	for _, tc := range []struct {
		url  string
		opts delivery.ClientOptions
		ok   bool
	}{
		{"https://tools.example.com/orders", strict, true},
		{"https://93.184.215.14/x", strict, true},
		{"https://[2606:4700::1111]/x", strict, true},
		{"http://tools.example.com/orders", strict, false},
		{"ftp://tools.example.com/", strict, false},
		{"tools.example.com/orders", strict, false},
		{"https://user:pw@tools.example.com/", strict, false},
		{"https://10.1.2.3/x", strict, false},
		{"https://169.254.169.254/latest/meta-data", strict, false},
		{"https://127.0.0.1:8443/x", strict, false},
		{"https://localhost/x", strict, false},
		{"https://[::1]/x", strict, false},
		{"https://[::ffff:10.0.0.1]/x", strict, false},
		{"https://[fd00::1]/x", strict, false},
		{"https://127.0.0.1:8443/x", loopback, true}, // the installation lets its clients reach it
		{"http://127.0.0.1:8443/x", loopback, false}, // a tool is https, whatever deliveries take
		{"https://10.1.2.3/x", loopback, false},
		{"https://example.com/" + strings.Repeat("a", delivery.MaxURLLength), strict, false},
	} {
		if msg := checkToolURL(tc.url, tc.opts); (msg == "") != tc.ok {
			t.Errorf("checkToolURL(%.60s) = %q, want ok %v", tc.url, msg, tc.ok)
		}
	}
}

func TestToolInputApply(t *testing.T) {
	t.Parallel()
	var in ToolInput
	body := `{"name":"bad name","description":"   ","parameters":{"type":"object"},"webhookUrl":"http://x.example","enabled":null,"webhookSecret":""}`
	if err := json.Unmarshal([]byte(body), &in); err != nil {
		t.Fatal(err)
	}
	var tool v1alpha1.AgentTool
	errs := in.apply(&tool, delivery.ClientOptions{})
	_, _, bad := in.secret()
	got := paths(append(errs, bad...))
	want := []string{"name", "description", "parameters.properties", "parameters.required", "webhookUrl", "enabled", "webhookSecret"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("invalid fields = %v, want %v", got, want)
	}
	if !reflect.DeepEqual(tool, v1alpha1.AgentTool{}) {
		t.Errorf("invalid input changed the tool: %+v", tool)
	}

	in = ToolInput{Name: optional.Value[string]{Set: true, Value: HandoffTool}}
	if got := paths(in.apply(&tool, delivery.ClientOptions{})); !reflect.DeepEqual(got, []string{"name"}) {
		t.Errorf("the handoff tool's name: %v", got)
	}
	if _, generated, _ := (ToolInput{WebhookSecret: optional.Value[string]{Set: true, Null: true}}).secret(); !generated {
		t.Error("webhookSecret null does not ask for a new secret")
	}
}

func TestFits(t *testing.T) {
	t.Parallel()
	a := &v1alpha1.Agent{}
	for i := range MaxTools - 1 {
		a.Spec.Tools = append(a.Spec.Tools, v1alpha1.AgentTool{ID: fmt.Sprintf("t%d", i), Name: fmt.Sprintf("tool_%d", i)})
	}
	if errs := fits(a, v1alpha1.AgentTool{Name: "tool_1"}, ""); !reflect.DeepEqual(paths(errs), []string{"name"}) {
		t.Errorf("a taken name: %v", errs)
	}
	if errs := fits(a, v1alpha1.AgentTool{Name: "tool_1"}, "t1"); len(errs) != 0 {
		t.Errorf("a tool keeping its own name: %v", errs)
	}
	if errs := fits(a, v1alpha1.AgentTool{Name: "new"}, ""); len(errs) != 0 {
		t.Errorf("the 50th tool: %v", errs)
	}
	a.Spec.Tools = append(a.Spec.Tools, v1alpha1.AgentTool{ID: "last", Name: "last"})
	if errs := fits(a, v1alpha1.AgentTool{Name: "new"}, ""); !reflect.DeepEqual(paths(errs), []string{""}) {
		t.Errorf("the 51st tool: %v", errs)
	}
}

func TestToolTimes(t *testing.T) {
	t.Parallel()
	created := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	a := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Name: "agt", CreationTimestamp: created},
		Spec: v1alpha1.AgentSpec{Tools: []v1alpha1.AgentTool{{ID: "a"}, {ID: "b"}}}}
	t1 := time.Date(2026, 2, 1, 0, 0, 0, 123000, time.UTC)
	t2 := t1.Add(time.Hour)
	setToolTimes(a, "a", &t1, t1)
	setToolTimes(a, "a", nil, t2)
	if got := toolOf(a, a.Spec.Tools[0]); !got.CreatedAt.Equal(t1) || !got.UpdatedAt.Equal(t2) || got.AgentID != "agt" {
		t.Errorf("tool a: created %v updated %v", got.CreatedAt, got.UpdatedAt)
	}
	// A tool the API never wrote (kubectl's) shows the agent's creation.
	if got := toolOf(a, a.Spec.Tools[1]); !got.CreatedAt.Equal(created.Time) {
		t.Errorf("tool b: created %v", got.CreatedAt)
	}
	// A deleted tool's times go.
	a.Spec.Tools = a.Spec.Tools[1:]
	setToolTimes(a, "", nil, time.Time{})
	if _, ok := a.Annotations[ToolTimesAnnotation]; ok {
		t.Errorf("annotation kept: %s", a.Annotations[ToolTimesAnnotation])
	}
	// An annotation edited by hand into nonsense is ignored.
	a.Annotations[ToolTimesAnnotation] = "{nonsense"
	if got := toolOf(a, a.Spec.Tools[0]); !got.CreatedAt.Equal(created.Time) {
		t.Errorf("tool b under a broken annotation: %v", got.CreatedAt)
	}
}

func TestToolsOrderAndFilter(t *testing.T) {
	t.Parallel()
	off := false
	a := &v1alpha1.Agent{Spec: v1alpha1.AgentSpec{Tools: []v1alpha1.AgentTool{{ID: "a"}, {ID: "b", Enabled: &off}, {ID: "c"}}}}
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i, id := range []string{"a", "b", "c"} {
		at := base.Add(time.Duration(i) * time.Second)
		setToolTimes(a, id, &at, at)
	}
	ids := func(ts []Tool) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.ID)
		}
		return out
	}
	s := &Service{}
	on := true
	if got := ids(s.Tools(a, nil)); !reflect.DeepEqual(got, []string{"c", "b", "a"}) {
		t.Errorf("all tools = %v, want newest first", got)
	}
	if got := ids(s.Tools(a, &on)); !reflect.DeepEqual(got, []string{"c", "a"}) {
		t.Errorf("enabled tools = %v", got)
	}
	if got := ids(s.Tools(a, &off)); !reflect.DeepEqual(got, []string{"b"}) {
		t.Errorf("disabled tools = %v", got)
	}
}

func TestKeepText(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain":                "plain",
		"nul\x00byte":          "nulbyte",
		"bad \xff utf8":        "bad \uFFFD utf8",
		strings.Repeat("é", 3): "é", // 6 bytes cut at 3: no half rune
	} {
		max := 100
		if strings.HasPrefix(in, "é") {
			max = 3
		}
		if got := keepText(in, max); got != want {
			t.Errorf("keepText(%q) = %q, want %q", in, got, want)
		}
	}
}
