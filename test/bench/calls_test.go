package bench

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/test/cluster"
)

// The voice row's load: sandbox calls at once, each asking voiceTurns questions (the sandbox's
// +150055501NN numbers ask NN).
const (
	voiceCalls = 100
	voiceTurns = 10
)

// voiceFigures are the voice row: the time from the caller's prompt reaching the relay to the
// answer's first text frame written (the sandbox model answers at once, so all of it is
// Switchboard's), over every answer of every call; lost counts answers missing from a
// transcript or not what the model said.
type voiceFigures struct {
	p50, p99 time.Duration
	answers  int
	lost     int
	wall     time.Duration
}

// runVoice places voiceCalls sandbox calls at once with a test key and reads their transcripts.
func runVoice(b *testing.B, c *cluster.Cluster, url, project string) voiceFigures {
	ctx := context.Background()
	key := c.Project(project, "")
	var snd v1alpha1.Sender
	if err := c.K8s.Get(ctx, client.ObjectKey{Namespace: project, Name: "main"}, &snd); err != nil {
		b.Fatal(err)
	}
	snd.Spec.Voice = &v1alpha1.Enablement{Enabled: true}
	if err := c.K8s.Update(ctx, &snd); err != nil {
		b.Fatal(err)
	}
	var proj v1alpha1.Project
	if err := c.K8s.Get(ctx, client.ObjectKey{Namespace: project, Name: "project"}, &proj); err != nil {
		b.Fatal(err)
	}
	calls := int64(1_000_000)
	proj.Spec.DailyLimits.Voice = &calls
	if err := c.K8s.Update(ctx, &proj); err != nil {
		b.Fatal(err)
	}
	a := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: "voice"}, Spec: v1alpha1.AgentSpec{
		DisplayName: "Voice", Enabled: true, Provider: v1alpha1.ModelZavu, Model: "sandbox", SystemPrompt: "Answer.",
		Senders: []string{"main"}, Voice: &v1alpha1.AgentVoice{Enabled: true, Greeting: "Hello."}}}
	if err := c.K8s.Create(ctx, a); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; {
		if err := c.K8s.Get(ctx, client.ObjectKeyFromObject(a), a); err == nil && len(a.Status.Senders) == 1 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the voice agent does not answer on its sender")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // the api's cache sees the sender and the agent too

	began := time.Now()
	to := fmt.Sprintf("+150055501%02d", voiceTurns)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: voiceCalls}}
	var wg sync.WaitGroup
	errs := make(chan error, voiceCalls)
	for range voiceCalls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, url+"/v1/calls", strings.NewReader(`{"to":"`+to+`"}`))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			if err != nil {
				errs <- err
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				errs <- fmt.Errorf("POST /v1/calls = %d", resp.StatusCode)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	count := func(sql string) int {
		var n int
		if err := c.Pool.QueryRow(ctx, sql, project).Scan(&n); err != nil {
			b.Fatal(err)
		}
		return n
	}
	for deadline := time.Now().Add(5 * time.Minute); count(`SELECT count(*) FROM calls WHERE project = $1 AND status IN ('queued', 'ringing', 'in_progress')`) > 0; {
		if time.Now().After(deadline) {
			b.Fatal("voice calls still going after 5 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	f := voiceFigures{wall: time.Since(began)}
	rows, err := c.Pool.Query(ctx, `SELECT u.text, a.text, a.latency_ms FROM call_turns u JOIN calls c ON c.id = u.call_id
		LEFT JOIN call_turns a ON a.call_id = u.call_id AND a.seq = u.seq + 1 AND a.role = 'assistant'
		WHERE c.project = $1 AND u.role = 'user'`, project)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var latencies []time.Duration
	for rows.Next() {
		var prompt string
		var answer *string
		var ms *int32
		if err := rows.Scan(&prompt, &answer, &ms); err != nil {
			b.Fatal(err)
		}
		if answer == nil || ms == nil || *answer != "[sandbox] You said: "+prompt {
			f.lost++
			continue
		}
		f.answers++
		latencies = append(latencies, time.Duration(*ms)*time.Millisecond)
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	f.lost += voiceCalls*voiceTurns - (f.answers + f.lost) // prompts never asked
	f.p50, f.p99 = quantile(latencies, 0.5), quantile(latencies, 0.99)
	return f
}
