// Package e2e runs the built switchboard binary as a user would: `switchboard dev`, then curl and
// kubectl against what it started, then Ctrl-C.
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/test/cluster"
)

func buildBinary(t *testing.T) string { return cluster.Binary(t) }

func TestMain(m *testing.M) {
	code := m.Run()
	cluster.RemoveBinary()
	os.Exit(code)
}

func readEnvFile(path string) map[string]string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	env := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = v
		}
	}
	return env
}

// descendants lists the processes below pid, from /proc.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The field after the parenthesised command name: state, then ppid.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 {
			ppid, _ := strconv.Atoi(fields[1])
			children[ppid] = append(children[ppid], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

func TestDevRunsSeedsAndStopsCleanly(t *testing.T) {
	d := startDev(t)
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	bin, dev, exited, env, envFile, stdout := d.bin, d.cmd, d.exited, d.env, d.envFile, d.stdout
	url, key, kubeconfig := env["SWITCHBOARD_URL"], env["SWITCHBOARD_API_KEY"], env["KUBECONFIG"]
	if !strings.HasPrefix(key, "svc_test_") || url == "" || kubeconfig == "" {
		t.Fatalf("dev.env = %v", env)
	}
	for _, want := range []string{url, key, "curl -H \"Authorization: Bearer " + key + "\" " + url + "/v1/me"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("banner does not show %q:\n%s", want, stdout.String())
		}
	}

	// The curl the banner prints works.
	req, _ := http.NewRequest(http.MethodGet, url+"/v1/me", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var me struct {
		IsTestMode bool `json:"isTestMode"`
		Project    struct {
			ID string `json:"id"`
		} `json:"project"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&me)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !me.IsTestMode || me.Project.ID != "default" {
		t.Errorf("GET /v1/me = %d %+v", resp.StatusCode, me)
	}
	// So does the send it prints, through the seeded sender and the sandbox.
	send, _ := http.NewRequest(http.MethodPost, url+"/v1/messages", strings.NewReader(`{"to":"+15005550100","text":"Hello from Switchboard"}`))
	send.Header.Set("Authorization", "Bearer "+key)
	send.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(send)
	if err != nil {
		t.Fatal(err)
	}
	var sent struct {
		Message struct{ ID, Status, Channel string } `json:"message"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&sent)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || sent.Message.Status != "queued" || sent.Message.Channel != "sms" {
		t.Fatalf("POST /v1/messages = %d %+v", resp.StatusCode, sent)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		get, _ := http.NewRequest(http.MethodGet, url+"/v1/messages/"+sent.Message.ID, nil)
		get.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(get)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Message struct{ Status string } `json:"message"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if got.Message.Status == "delivered" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sandbox did not deliver the message within 30s (status %q)", got.Message.Status)
		}
		time.Sleep(200 * time.Millisecond)
	}

	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(url + path)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s = %v %v", path, resp, err)
		}
		if resp != nil {
			resp.Body.Close()
		}
	}

	// The documented CLI works against the dev system with dev.env's settings.
	apikey := exec.Command(bin, "apikey", "create", "--project", "default", "--name", "from-dev-env")
	apikey.Env = append(os.Environ(), "DATABASE_URL="+env["DATABASE_URL"])
	if out, err := apikey.CombinedOutput(); err != nil || !strings.Contains(string(out), "svc_") {
		t.Fatalf("switchboard apikey create with dev.env's DATABASE_URL: %v\n%s", err, out)
	}

	// kubectl sees the seeded sender Ready.
	kubectl := exec.Command(filepath.Join(assets, "kubectl"), "get", "senders", "-n", "default")
	kubectl.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	out, err := kubectl.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get senders: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "READY") {
		t.Fatalf("kubectl get senders:\n%s", out)
	}
	// kubectl aligns columns: the READY cell starts where its heading does.
	col := strings.Index(lines[0], "READY")
	if !strings.HasPrefix(lines[1], "default ") || col < 0 || len(lines[1]) <= col || !strings.HasPrefix(lines[1][col:], "True") {
		t.Fatalf("seeded sender not shown Ready:\n%s", out)
	}

	// Ctrl-C stops everything it started.
	children := descendants(dev.Process.Pid)
	if len(children) < 2 {
		t.Fatalf("expected etcd and kube-apiserver below dev, found %v", children)
	}
	if err := dev.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("dev exited with %v after Ctrl-C, want 0", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("dev did not stop within 60s of Ctrl-C")
	}
	waitCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, pid := range children {
		for alive(pid) && waitCtx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
		}
		if alive(pid) {
			t.Errorf("process %d started by dev still runs after it stopped", pid)
		}
	}
	if _, err := os.Stat(envFile); !os.IsNotExist(err) {
		t.Errorf("dev.env left behind after stop")
	}
}
