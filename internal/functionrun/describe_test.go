package functionrun

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/functionbuild"
)

// build bundles one index.ts with functionbuild, as a deploy does.
func build(tb testing.TB, src string) []byte {
	tb.Helper()
	b, err := functionbuild.Build(functionbuild.Source{Entrypoint: "index.ts", Files: map[string]string{"index.ts": src}})
	if err != nil {
		tb.Fatal(err)
	}
	return b.Code
}

// describe runs Describe with node from PATH; the test is skipped without node.
func describe(tb testing.TB, bundle []byte, env map[string]string) (Manifest, error) {
	tb.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		tb.Skip("node is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return Describe(ctx, "", bundle, env, 10*time.Second)
}

// wantDescribeError fails unless err is a *DescribeError whose message contains each of parts.
func wantDescribeError(tb testing.TB, err error, parts ...string) {
	tb.Helper()
	var le *DescribeError
	if !errors.As(err, &le) {
		tb.Fatalf("error %v (%T), want a *DescribeError", err, err)
	}
	for _, p := range parts {
		if !strings.Contains(le.Message, p) {
			tb.Errorf("error %q does not mention %q", le.Message, p)
		}
	}
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(tb testing.TB, a, b []byte) bool {
	tb.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		tb.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		tb.Fatalf("%s: %v", b, err)
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return string(xs) == string(ys)
}

// agentSource declares an agent and two tools, and no default export.
const agentSource = `
import { defineAgent, defineTool } from '@zavudev/functions';

defineAgent({
  senderId: process.env.SENDER_ID!,
  name: 'Orders',
  provider: 'zavu',
  model: 'gpt-4o-mini',
  prompt: ['Help with orders.', 'Be brief.'].join('\n'),
  temperature: 0.2,
  hooks: { onStart: () => 1, keep: [1, () => 2, 'x'] },
});

defineTool({
  name: 'get_order_status',
  description: "Look up an order's status.",
  parameters: {
    type: 'object',
    properties: { orderNumber: { type: 'string', description: 'The order number.' } },
    required: ['orderNumber'],
  },
  handler: async (args: { orderNumber: string }, ctx) => {
    ctx.log('looking up', args.orderNumber);
    console.info('info line');
    return { found: true, orderNumber: args.orderNumber, id: ctx.invocationId, left: ctx.remainingTimeMs() > 0 };
  },
});

const ping = defineTool({
  name: 'ping',
  description: 'Answers pong.',
  handler: async (args: Record<string, unknown>) => {
    if (args.fail) throw new Error('ping failed');
    if (args.hang) await new Promise(() => {});
    return { pong: true, args: Object.keys(args).length, frozen: Object.isFrozen(ping), name: ping.name, same: typeof ping.handler === 'function' };
  },
});
`

func TestDescribeHandlerOnly(t *testing.T) {
	t.Parallel()
	m, err := describe(t, build(t, `
import { defineFunction } from '@zavudev/functions';
export default defineFunction(async (event) => event);
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !m.HasHandler || m.Agent != nil || m.Tools == nil || len(m.Tools) != 0 {
		t.Errorf("manifest %+v", m)
	}
	// The manifest's own JSON.
	j, _ := json.Marshal(m)
	if string(j) != `{"hasHandler":true,"tools":[]}` {
		t.Errorf("manifest JSON %s", j)
	}

	// A plain function export is a handler too.
	m, err = describe(t, []byte(`module.exports = async () => 1;`), nil)
	if err != nil || !m.HasHandler || len(m.Tools) != 0 {
		t.Errorf("plain export: %+v, %v", m, err)
	}
}

func TestDescribeAgentAndTools(t *testing.T) {
	t.Parallel()
	m, err := describe(t, build(t, agentSource), map[string]string{"SENDER_ID": "snd-1"})
	if err != nil {
		t.Fatal(err)
	}
	if m.HasHandler {
		t.Error("HasHandler without a default export")
	}
	// Functions are dropped, in objects and arrays alike.
	wantAgent := `{"senderId":"snd-1","name":"Orders","provider":"zavu","model":"gpt-4o-mini","prompt":"Help with orders.\nBe brief.","temperature":0.2,"hooks":{"keep":[1,"x"]}}`
	if !jsonEqual(t, m.Agent, []byte(wantAgent)) {
		t.Errorf("agent %s\nwant %s", m.Agent, wantAgent)
	}
	if len(m.Tools) != 2 {
		t.Fatalf("tools %+v", m.Tools)
	}
	get, ping := m.Tools[0], m.Tools[1]
	if get.Name != "get_order_status" || get.Description != "Look up an order's status." {
		t.Errorf("tool 0 %+v", get)
	}
	if want := `{"type":"object","properties":{"orderNumber":{"type":"string","description":"The order number."}},"required":["orderNumber"]}`; !jsonEqual(t, get.Parameters, []byte(want)) {
		t.Errorf("parameters %s", get.Parameters)
	}
	if ping.Name != "ping" || ping.Description != "Answers pong." || !jsonEqual(t, ping.Parameters, []byte(`{"type":"object","properties":{}}`)) {
		t.Errorf("tool 1 %+v (%s)", ping, ping.Parameters)
	}

	// Without SENDER_ID the property is undefined, so absent.
	m, err = describe(t, build(t, agentSource), nil)
	if err != nil {
		t.Fatal(err)
	}
	var agent map[string]any
	if err := json.Unmarshal(m.Agent, &agent); err != nil || agent["name"] != "Orders" {
		t.Fatalf("agent %s: %v", m.Agent, err)
	}
	if _, ok := agent["senderId"]; ok {
		t.Errorf("senderId without SENDER_ID: %s", m.Agent)
	}
}

func TestDescribeEnvironment(t *testing.T) {
	t.Parallel()
	m, err := describe(t, []byte(`
const { defineAgent } = require('@zavudev/functions');
defineAgent({ env: { ...process.env }, tz: new Date(0).getTimezoneOffset() });
`), map[string]string{"SENDER_ID": "snd-1", "TZ": "Europe/Paris", "NODE_OPTIONS": "--allow-fs-write=*", "BAD=KEY": "x"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"env":{"SENDER_ID":"snd-1","SWITCHBOARD_SECRET_KEYS":"SENDER_ID","TZ":"UTC","NODE_ENV":"production"},"tz":0}`
	if !jsonEqual(t, m.Agent, []byte(want)) {
		t.Errorf("agent %s\nwant %s", m.Agent, want)
	}
	if m.HasHandler || len(m.Tools) != 0 {
		t.Errorf("manifest %+v", m)
	}
}

// Both module names share one registry; a handler and tools may live side by side.
func TestDescribeBothModulesAndHandler(t *testing.T) {
	t.Parallel()
	bundle := []byte(`
const z = require('@zavudev/functions');
const s = require('@switchboard/functions');
s.defineAgent({ name: 'a' });
z.defineTool({ name: 'one', description: 'One.', handler: () => 1 });
s.defineTool({ name: 'two-2', description: 'Two.', parameters: { type: 'object', properties: { n: { type: 'number' } } }, handler: () => 2 });
module.exports.default = z.defineFunction(async (event) => ({ handler: event.type }));
`)
	m, err := describe(t, bundle, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range m.Tools {
		names = append(names, tool.Name)
	}
	if !m.HasHandler || string(m.Agent) != `{"name":"a"}` || !slices.Equal(names, []string{"one", "two-2"}) {
		t.Errorf("manifest %+v (agent %s)", m, m.Agent)
	}

	l := newLocal(t, LocalOptions{})
	d := deployment("both", string(bundle))
	wantOK(t, invoke(t, l, d, "h", `{"type":"message.inbound"}`), `{"handler":"message.inbound"}`)
	wantOK(t, invoke(t, l, d, "t", `{"type":"tool","data":{"tool":"two-2"}}`), `2`)
	wantFail(t, invoke(t, l, d, "u", `{"type":"tool","data":{"tool":"three"}}`), ReasonError, "the function has no tool three")
}

func TestDescribeLoadFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, bundle string
		want         []string
	}{
		{"throws", `console.log('loading'); throw new Error('config missing');`, []string{"Error: config missing"}},
		{"syntax", `module.exports.default = (async (event) => { return 1 ;`, []string{"SyntaxError"}},
		{"neither", `exports.helper = () => 1;`, []string{"the entry module must export default defineFunction(...)", "defineTool"}},
		{"invalid default", `exports.default = 'x';`, []string{"the entry module must export default defineFunction(...)"}},
		{"duplicate", `const { defineTool } = require('@zavudev/functions');
defineTool({ name: 'dup', description: 'First.', handler: () => 1 });
defineTool({ name: 'dup', description: 'Second.', handler: () => 2 });`, []string{"a tool named dup is already defined"}},
		{"duplicate across modules", `require('@zavudev/functions').defineTool({ name: 'dup', description: 'First.', handler: () => 1 });
require('@switchboard/functions').defineTool({ name: 'dup', description: 'Second.', handler: () => 2 });`, []string{"a tool named dup is already defined"}},
		{"two agents", `const { defineAgent } = require('@zavudev/functions'); defineAgent({}); defineAgent({});`, []string{"already defines an agent"}},
		{"agent not an object", `require('@zavudev/functions').defineAgent('x');`, []string{"TypeError: defineAgent expects a plain object"}},
		{"agent array", `require('@zavudev/functions').defineAgent([]);`, []string{"TypeError"}},
		{"agent cycle", `const a = {}; a.self = a; require('@zavudev/functions').defineAgent(a);`, []string{"TypeError", "JSON-serialisable"}},
		{"tool not an object", `require('@zavudev/functions').defineTool();`, []string{"TypeError: defineTool expects an object"}},
		{"tool name", `require('@zavudev/functions').defineTool({ name: 'has space', description: 'd', handler: () => 1 });`, []string{"TypeError", "name must match"}},
		{"tool name long", `require('@zavudev/functions').defineTool({ name: 'x'.repeat(65), description: 'd', handler: () => 1 });`, []string{"TypeError", "name must match"}},
		{"tool description", `require('@zavudev/functions').defineTool({ name: 'a', description: '', handler: () => 1 });`, []string{"TypeError", "description"}},
		{"tool description long", `require('@zavudev/functions').defineTool({ name: 'a', description: 'x'.repeat(1025), handler: () => 1 });`, []string{"TypeError", "description"}},
		{"tool parameters", `require('@zavudev/functions').defineTool({ name: 'a', description: 'd', parameters: [], handler: () => 1 });`, []string{"TypeError", "parameters must be a plain object"}},
		{"tool parameters class", `require('@zavudev/functions').defineTool({ name: 'a', description: 'd', parameters: new Map(), handler: () => 1 });`, []string{"TypeError", "parameters must be a plain object"}},
		{"tool handler", `require('@zavudev/functions').defineTool({ name: 'a', description: 'd' });`, []string{"TypeError", "handler must be a function"}},
		{"exits", `process.exit(5);`, []string{"exited with code 5 before the function loaded"}},
		{"memory", `const a = []; while (true) a.push(new Array(1e6).fill(1));`, []string{"out of memory (256 MB) while loading the function"}},
		{"sandbox read", `require('node:fs').readFileSync('/etc/passwd');`, []string{"ERR_ACCESS_DENIED"}},
		{"sandbox process", `require('node:child_process').execSync('true');`, []string{"ERR_ACCESS_DENIED"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := describe(t, []byte(tc.bundle), nil)
			wantDescribeError(t, err, tc.want...)
			if err != nil && !strings.HasPrefix(err.Error(), "the function could not load: ") {
				t.Errorf("error %q", err)
			}
		})
	}
}

func TestDescribeLoadFailureBuilt(t *testing.T) {
	t.Parallel()
	// The stack points into the TypeScript source.
	_, err := describe(t, build(t, `
import { defineTool } from '@zavudev/functions';
const url: string = process.env.ORDERS_API_URL ?? '';
if (!url) throw new Error('ORDERS_API_URL is not set');
defineTool({ name: 'x', description: 'x', handler: async () => url });
`), nil)
	wantDescribeError(t, err, "ORDERS_API_URL is not set", "index.ts:4")
}

func TestDescribeTimeoutAndNode(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	start := time.Now()
	_, err := Describe(context.Background(), "node", []byte(`while (true) {}`), nil, 500*time.Millisecond)
	wantDescribeError(t, err, "did not load within 500ms")
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("the timeout took %v", el)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(300 * time.Millisecond); cancel() }()
	_, err = Describe(ctx, "node", []byte(`while (true) {}`), nil, 10*time.Second)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Describe with a canceled context: %v", err)
	}

	fake := filepath.Join(t.TempDir(), "node")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho v18.19.0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var le *DescribeError
	if _, err := Describe(context.Background(), fake, []byte(`module.exports = () => 1;`), nil, time.Second); err == nil || !strings.Contains(err.Error(), "Node 20 or later") || errors.As(err, &le) {
		t.Errorf("Describe with node 18: %v", err)
	}
	if _, err := Describe(context.Background(), filepath.Join(t.TempDir(), "missing"), []byte(`module.exports = () => 1;`), nil, time.Second); err == nil || errors.As(err, &le) {
		t.Errorf("Describe without node: %v", err)
	}
}

// Describe leaves no folder behind.
func TestDescribeRemovesItsFolder(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	if _, err := Describe(context.Background(), "", []byte(`module.exports = () => 1;`), nil, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := Describe(context.Background(), "", []byte(`throw new Error('x');`), nil, 0); err == nil {
		t.Fatal("no error")
	}
	entries, _ := os.ReadDir(tmp)
	if len(entries) != 0 {
		t.Errorf("Describe left %d entries in TMPDIR", len(entries))
	}
}

func TestInvokeTools(t *testing.T) {
	t.Parallel()
	l := newLocal(t, LocalOptions{})
	d := deployment("tools", string(build(t, agentSource)))
	d.Env = map[string]string{"SENDER_ID": "snd-1"}

	r := invoke(t, l, d, "evt_1", `{"id":"evt_1","type":"tool","data":{"tool":"get_order_status","arguments":{"orderNumber":"A-1"}}}`)
	wantOK(t, r, `{"found":true,"orderNumber":"A-1","id":"evt_1","left":true}`)
	var got []string
	for _, line := range r.Logs {
		got = append(got, line.Stream+": "+line.Message)
	}
	if want := []string{"log: looking up A-1", "info: info line"}; !slices.Equal(got, want) {
		t.Errorf("logs %q, want %q", got, want)
	}

	// No arguments is {}; the returned copy is frozen and keeps the handler.
	wantOK(t, invoke(t, l, d, "ping", `{"type":"tool","data":{"tool":"ping"}}`), `{"pong":true,"args":0,"frozen":true,"name":"ping","same":true}`)
	wantOK(t, invoke(t, l, d, "ping2", `{"type":"tool","data":{"tool":"ping","arguments":{"a":1,"b":2}}}`), `{"pong":true,"args":2,"frozen":true,"name":"ping","same":true}`)

	// A tool's failures are a handler's.
	wantFail(t, invoke(t, l, d, "fail", `{"type":"tool","data":{"tool":"ping","arguments":{"fail":true}}}`), ReasonError, "Error: ping failed", "index.ts")
	hang := *d
	hang.Timeout = 300 * time.Millisecond
	wantFail(t, invoke(t, l, &hang, "hang", `{"type":"tool","data":{"tool":"ping","arguments":{"hang":true}}}`), ReasonTimeout, "timed out after 300ms")

	r = invoke(t, l, d, "unknown", `{"type":"tool","data":{"tool":"nope","arguments":{}}}`)
	wantFail(t, r, ReasonError, "the function has no tool nope")
	if r.Cold {
		t.Error("an unknown tool restarted the process")
	}
	wantFail(t, invoke(t, l, d, "noname", `{"type":"tool","data":{}}`), ReasonError, "names no tool")
	for _, ev := range []string{`{"type":"message.inbound","data":{}}`, `{}`, ``} {
		r = invoke(t, l, d, "other", ev)
		wantFail(t, r, ReasonError, "the function has no default handler (it declares only an agent and tools)")
	}
	wantOK(t, invoke(t, l, d, "after", `{"type":"tool","data":{"tool":"ping"}}`), `{"pong":true,"args":0,"frozen":true,"name":"ping","same":true}`)

	// An agent alone loads too.
	agentOnly := deployment("agentonly", `require('@zavudev/functions').defineAgent({ name: 'a' });`)
	wantFail(t, invoke(t, l, agentOnly, "i", `{"type":"cron"}`), ReasonError, "no default handler")
	wantFail(t, invoke(t, l, agentOnly, "j", `{"type":"tool","data":{"tool":"x"}}`), ReasonError, "the function has no tool x")
}

// The factory template order-status, bundled as a deploy does: what it declares, and a tool
// run against a stand-in of the order system.
func TestOrderStatusTemplate(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("../agent/catalog/templates/order-status/files/index.ts")
	if err != nil {
		t.Fatal(err)
	}
	bundle := build(t, string(src))
	m, err := describe(t, bundle, map[string]string{"SENDER_ID": "snd-1", "ORDERS_API_URL": "http://127.0.0.1:1", "ORDERS_API_TOKEN": "x"})
	if err != nil {
		t.Fatal(err)
	}
	var agent struct {
		SenderID, Name, Provider, Model, Prompt string
	}
	if err := json.Unmarshal(m.Agent, &agent); err != nil {
		t.Fatal(err)
	}
	if agent.Name != "Order status" || agent.SenderID != "snd-1" || agent.Provider != "zavu" || agent.Model != "gpt-4o-mini" || !strings.Contains(agent.Prompt, "get_order_status") {
		t.Errorf("agent %s", m.Agent)
	}
	var names []string
	for _, tool := range m.Tools {
		names = append(names, tool.Name)
		var schema struct {
			Type       string
			Properties map[string]any
			Required   []string
		}
		if err := json.Unmarshal(tool.Parameters, &schema); err != nil || schema.Type != "object" || schema.Properties["orderNumber"] == nil || !slices.Contains(schema.Required, "contact") || tool.Description == "" {
			t.Errorf("tool %s: %s (%v)", tool.Name, tool.Parameters, err)
		}
	}
	if !slices.Equal(names, []string{"get_order_status", "track_shipment", "start_return"}) || m.HasHandler {
		t.Errorf("tools %q, hasHandler %v", names, m.HasHandler)
	}

	// The tool calls the order system with the function's variables.
	var auth string
	orders := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		if r.URL.Path != "/orders/A-1" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"number":"A-1","email":"ana@example.com","status":"shipped","placedAt":"2025-05-01","items":[{"sku":"s1","name":"Mug","quantity":2}]}`)
	}))
	t.Cleanup(orders.Close)
	l := newLocal(t, LocalOptions{})
	d := &Deployment{ID: "order-status", FunctionID: "fn_orders", Bundle: bundle, Timeout: 10 * time.Second,
		Env: map[string]string{"SENDER_ID": "snd-1", "ORDERS_API_URL": orders.URL, "ORDERS_API_TOKEN": "tok"}}
	r := invoke(t, l, d, "evt_1", `{"id":"evt_1","type":"tool","data":{"tool":"get_order_status","arguments":{"orderNumber":"A-1","contact":"Ana@example.com"}}}`)
	wantOK(t, r, `{"found":true,"status":"shipped","placedAt":"2025-05-01","estimatedDelivery":null,"items":["2 × Mug"]}`)
	if auth != "Bearer tok" {
		t.Errorf("authorization %q", auth)
	}
	wantOK(t, invoke(t, l, d, "evt_2", `{"type":"tool","data":{"tool":"track_shipment","arguments":{"orderNumber":"B-2","contact":"x"}}}`),
		`{"found":false,"message":"No order matches that number and contact."}`)
}
