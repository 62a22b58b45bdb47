package functiongit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/functiongit"
)

func TestURLFor(t *testing.T) {
	for _, c := range []struct{ base, want string }{
		{"", "https://github.com/acme/order-bot.git"},
		{"https://github.com", "https://github.com/acme/order-bot.git"},
		{"https://ghe.example.com/", "https://ghe.example.com/acme/order-bot.git"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080/acme/order-bot.git"},
	} {
		if got := functiongit.URLFor(c.base, "acme", "order-bot"); got != c.want {
			t.Errorf("URLFor(%q) = %q, want %q", c.base, got, c.want)
		}
	}
}

func TestValid(t *testing.T) {
	check := func(name string, f func(string) bool, good, bad []string) {
		t.Helper()
		for _, s := range good {
			if !f(s) {
				t.Errorf("%s(%q) = false", name, s)
			}
		}
		for _, s := range bad {
			if f(s) {
				t.Errorf("%s(%q) = true", name, s)
			}
		}
	}
	check("ValidOwner", functiongit.ValidOwner,
		[]string{"acme", "a", "Acme-Corp", "a1-b2", strings.Repeat("a", 39)},
		[]string{"", "-acme", "acme-", "ac_me", "ac.me", "ac me", "acme/x", strings.Repeat("a", 40)})
	check("ValidRepo", functiongit.ValidRepo,
		[]string{"order-bot", "a", "my.repo_1", ".github", "..x", strings.Repeat("r", 100)},
		[]string{"", ".", "..", "a/b", "a b", "a:b", strings.Repeat("r", 101)})
	check("ValidBranch", functiongit.ValidBranch,
		[]string{"main", "release/v1.2", "feature/x-y_z", "v1", "déploiement", "a@b", strings.Repeat("b", 255)},
		[]string{"", "@", "-x", "/main", "main/", "a//b", "a..b", ".hidden", "a/.b", "x.lock", "a/x.lock/b", "main.",
			"a b", "a~1", "a^", "a:b", "a?", "a*", "a[b", `a\b`, "a@{1}", "a\x00b", "a\tb", "a\x7fb", strings.Repeat("b", 256)})
	check("ValidRootDir", functiongit.ValidRootDir,
		[]string{"", "services", "services/bot", ".config/fn", "a.b/c-d_e", strings.Repeat("d", 200)},
		[]string{"/abs", "services/", "a//b", "..", "../x", "a/../b", "a/./b", ".", `a\b`, "a\nb", strings.Repeat("d", 201)})
}

// pushBody is a push delivery as GitHub sends it (https://docs.github.com/en/webhooks/webhook-events-and-payloads#push),
// trimmed of the fields Fetch does not read only where they repeat.
const pushBody = `{
  "ref": "refs/heads/main",
  "before": "6113728f27ae82c7b1a177c8d03f9e96e0adf246",
  "after": "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c",
  "repository": {
    "id": 1296269,
    "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5",
    "name": "order-bot",
    "full_name": "acme/order-bot",
    "private": true,
    "owner": {"name": "acme", "email": null, "login": "acme", "id": 1, "type": "Organization"},
    "html_url": "https://github.com/acme/order-bot",
    "clone_url": "https://github.com/acme/order-bot.git",
    "default_branch": "main",
    "pushed_at": 1717171717
  },
  "pusher": {"name": "octocat", "email": "octocat@github.com"},
  "sender": {"login": "octocat", "id": 583231, "type": "User"},
  "created": false,
  "deleted": false,
  "forced": false,
  "base_ref": null,
  "compare": "https://github.com/acme/order-bot/compare/6113728f27ae...0d1a26e67d8f",
  "commits": [
    {
      "id": "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c",
      "tree_id": "f9d2a07e9488b91af2641b26b9407fe22a451433",
      "distinct": true,
      "message": "Handle refunds\n\nCloses #42.",
      "timestamp": "2024-05-31T16:08:37+02:00",
      "url": "https://github.com/acme/order-bot/commit/0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c",
      "author": {"name": "Octo Cat", "email": "octocat@github.com", "username": "octocat"},
      "committer": {"name": "GitHub", "email": "noreply@github.com", "username": "web-flow"},
      "added": ["lib/refund.ts"],
      "removed": [],
      "modified": ["index.ts"]
    }
  ],
  "head_commit": {
    "id": "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c",
    "tree_id": "f9d2a07e9488b91af2641b26b9407fe22a451433",
    "distinct": true,
    "message": "Handle refunds\r\n\r\nCloses #42.",
    "timestamp": "2024-05-31T16:08:37+02:00",
    "url": "https://github.com/acme/order-bot/commit/0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c",
    "author": {"name": "Octo Cat", "email": "octocat@github.com", "username": "octocat"},
    "committer": {"name": "GitHub", "email": "noreply@github.com", "username": "web-flow"},
    "added": ["lib/refund.ts"],
    "removed": [],
    "modified": ["index.ts"]
  }
}`

func TestParsePush(t *testing.T) {
	p, err := functiongit.ParsePush([]byte(pushBody))
	if err != nil {
		t.Fatal(err)
	}
	want := functiongit.Push{
		Ref: "refs/heads/main", Branch: "main",
		Before:  "6113728f27ae82c7b1a177c8d03f9e96e0adf246",
		After:   "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c",
		Message: "Handle refunds", Repository: "acme/order-bot",
	}
	if p != want {
		t.Errorf("push %+v, want %+v", p, want)
	}

	// A branch deleted: no head commit, after is zeros.
	del := `{"ref": "refs/heads/feature/x", "before": "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c",
		"after": "0000000000000000000000000000000000000000", "created": false, "deleted": true,
		"head_commit": null, "commits": [], "repository": {"full_name": "acme/order-bot"}}`
	p, err = functiongit.ParsePush([]byte(del))
	if err != nil || !p.Deleted || p.Branch != "feature/x" || p.Message != "" || p.After != strings.Repeat("0", 40) {
		t.Errorf("deletion %+v %v", p, err)
	}

	// A tag: no branch.
	tag := `{"ref": "refs/tags/v1.0.0", "before": "0000000000000000000000000000000000000000",
		"after": "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c", "created": true, "deleted": false,
		"head_commit": {"message": "Release"}, "repository": {"full_name": "acme/order-bot"}}`
	p, err = functiongit.ParsePush([]byte(tag))
	if err != nil || p.Branch != "" || p.Ref != "refs/tags/v1.0.0" || p.Message != "Release" {
		t.Errorf("tag %+v %v", p, err)
	}

	for _, bad := range []string{``, `{`, `[]`, `{"zen": "Keep it logically awesome.", "hook_id": 1}`, `{"ref": "refs/heads/main"}`, `{"ref": 1}`} {
		if _, err := functiongit.ParsePush([]byte(bad)); !errors.Is(err, functiongit.ErrNotPush) {
			t.Errorf("ParsePush(%q): %v", bad, err)
		}
	}
}

func TestSignature(t *testing.T) {
	const secret = "It's a Secret to Everybody"
	body := []byte("Hello, World!")
	// GitHub's documented example (https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries).
	const documented = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	if got := functiongit.Sign(secret, body); got != documented {
		t.Errorf("Sign = %s, want %s", got, documented)
	}
	if !functiongit.VerifySignature(secret, body, documented) {
		t.Error("the documented signature does not verify")
	}
	sig := functiongit.Sign(secret, []byte(pushBody))
	for _, c := range []struct {
		name, secret, body, header string
		ok                         bool
	}{
		{"good", secret, pushBody, sig, true},
		{"upper-case hex", secret, pushBody, "sha256=" + strings.ToUpper(strings.TrimPrefix(sig, "sha256=")), true},
		{"body changed", secret, pushBody + " ", sig, false},
		{"bad signature", secret, pushBody, "sha256=" + strings.Repeat("0", 64), false},
		{"missing prefix", secret, pushBody, strings.TrimPrefix(sig, "sha256="), false},
		{"sha1 header", secret, pushBody, "sha1=" + strings.TrimPrefix(sig, "sha256="), false},
		{"wrong secret", "another secret", pushBody, sig, false},
		{"empty secret", "", pushBody, functiongit.Sign("", []byte(pushBody)), false},
		{"missing header", secret, pushBody, "", false},
		{"not hex", secret, pushBody, "sha256=zz" + sig[9:], false},
		{"truncated", secret, pushBody, sig[:len(sig)-2], false},
	} {
		if got := functiongit.VerifySignature(c.secret, []byte(c.body), c.header); got != c.ok {
			t.Errorf("%s: VerifySignature = %v", c.name, got)
		}
	}
}
