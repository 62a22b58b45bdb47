package templatetext

import (
	"reflect"
	"testing"
)

func TestPlaceholders(t *testing.T) {
	if got := Placeholders("Hi {{1}}, your order {{2}} ships {{ 3 }}; {{1}} again"); !reflect.DeepEqual(got, []int{1, 2, 3}) {
		t.Fatalf("Placeholders = %v", got)
	}
	if msg := CheckPositions("{{1}} and {{3}}"); msg == "" {
		t.Fatal("a gap was taken")
	}
	if msg := CheckPositions("{{2}} {{1}}"); msg != "" {
		t.Fatalf("out of order is fine: %s", msg)
	}
}

func TestMatchAndRender(t *testing.T) {
	body := "Hi {{1}}, order {{2}} is ready"
	m := Match(body, map[string]string{"1": "Ada", "3": "x"})
	if !reflect.DeepEqual(m.Missing, []string{"2"}) || !reflect.DeepEqual(m.Extra, []string{"3"}) || m.Empty() {
		t.Fatalf("Match = %+v", m)
	}
	if got := m.String(); got != "missing 2; not in the template 3" {
		t.Fatalf("String = %q", got)
	}
	vars := map[string]string{"1": "Ada", "2": "#42"}
	if !Match(body, vars).Empty() {
		t.Fatal("exact variables mismatch")
	}
	if got := Render(body, vars); got != "Hi Ada, order #42 is ready" {
		t.Fatalf("Render = %q", got)
	}
	if got := Ordered(body, vars); !reflect.DeepEqual(got, []string{"Ada", "#42"}) {
		t.Fatalf("Ordered = %v", got)
	}
}
