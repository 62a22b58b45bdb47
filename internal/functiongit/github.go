package functiongit

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
)

// DefaultBase is GitHub's web root, the default base of URLFor.
const DefaultBase = "https://github.com"

// URLFor is the clone URL of a GitHub owner/repo under base (default "https://github.com"; the
// installation may set another for GitHub Enterprise or tests).
func URLFor(base, owner, repo string) string {
	base = strings.TrimRight(strings.TrimSpace(base), "/")
	if base == "" {
		base = DefaultBase
	}
	return base + "/" + owner + "/" + repo + ".git"
}

// ValidOwner checks a GitHub user or organisation name: 1-39 of [A-Za-z0-9-], not starting or
// ending with '-'.
func ValidOwner(s string) bool {
	if len(s) < 1 || len(s) > 39 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) && s[i] != '-' {
			return false
		}
	}
	return true
}

// ValidRepo checks a GitHub repository name: 1-100 of [A-Za-z0-9._-], not "." or "..".
func ValidRepo(s string) bool {
	if len(s) < 1 || len(s) > 100 || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ValidBranch checks a branch name against git check-ref-format's rules (for refs/heads/<name>)
// and `git branch`'s: at most 255 bytes; no control characters, space, ~ ^ : ? * [ \ or DEL;
// no "..", "@{" or "//"; not "@"; not starting with '-' or '/', not ending with '/' or '.';
// no component starting with '.' or ending with ".lock". Other non-ASCII bytes are allowed, as
// git allows them.
func ValidBranch(s string) bool {
	if s == "" || len(s) > 255 || s == "@" || s[0] == '-' {
		return false
	}
	if strings.Contains(s, "..") || strings.Contains(s, "@{") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return false
		}
	}
	if strings.HasSuffix(s, ".") {
		return false
	}
	for _, comp := range strings.Split(s, "/") {
		if comp == "" || comp[0] == '.' || strings.HasSuffix(comp, ".lock") {
			return false
		}
	}
	return true
}

// ValidRootDir checks a link's rootDir: "" (the repository's root) or a relative folder with
// forward slashes, no empty, "." or ".." segment, no backslash or control character, at most
// 200 bytes.
func ValidRootDir(s string) bool {
	if s == "" {
		return true
	}
	if len(s) > 200 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f || s[i] == '\\' {
			return false
		}
	}
	for _, seg := range strings.Split(s, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// Push is a GitHub push delivery.
type Push struct {
	Ref, Branch, After, Before string // Branch = Ref without "refs/heads/" ("" for tags)
	Deleted                    bool
	Message                    string // head_commit.message first line
	Repository                 string // repository.full_name
}

// ErrNotPush is a body that is not a push event.
var ErrNotPush = errors.New("not a GitHub push event")

// ParsePush reads a push event body (X-GitHub-Event: push).
func ParsePush(body []byte) (Push, error) {
	var ev struct {
		Ref        string `json:"ref"`
		Before     string `json:"before"`
		After      string `json:"after"`
		Deleted    bool   `json:"deleted"`
		HeadCommit *struct {
			Message string `json:"message"`
		} `json:"head_commit"`
		Repository *struct {
			FullName string `json:"full_name"`
		} `json:"repository"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return Push{}, errors.Join(ErrNotPush, err)
	}
	if ev.Ref == "" || ev.Repository == nil || ev.Repository.FullName == "" {
		return Push{}, ErrNotPush
	}
	p := Push{
		Ref:        ev.Ref,
		Before:     ev.Before,
		After:      ev.After,
		Deleted:    ev.Deleted,
		Repository: ev.Repository.FullName,
	}
	if b, ok := strings.CutPrefix(ev.Ref, "refs/heads/"); ok {
		p.Branch = b
	}
	if ev.HeadCommit != nil {
		p.Message = firstLine(ev.HeadCommit.Message)
	}
	return p, nil
}

// signaturePrefix starts X-Hub-Signature-256.
const signaturePrefix = "sha256="

// VerifySignature checks X-Hub-Signature-256 ("sha256=<hex HMAC-SHA256 of body under secret>")
// in constant time. An empty secret verifies nothing.
func VerifySignature(secret string, body []byte, header string) bool {
	if secret == "" {
		return false
	}
	hexSig, ok := strings.CutPrefix(strings.TrimSpace(header), signaturePrefix)
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	return hmac.Equal(got, mac(secret, body))
}

// Sign returns the X-Hub-Signature-256 value of body under secret (tests and the loopback peer
// use it).
func Sign(secret string, body []byte) string {
	return signaturePrefix + hex.EncodeToString(mac(secret, body))
}

func mac(secret string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return m.Sum(nil)
}
