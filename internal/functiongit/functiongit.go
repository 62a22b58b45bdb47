// Package functiongit fetches a function's source from a linked GitHub repository and reads
// GitHub's push webhook (docs/functions-wire.md §1.6): Fetch downloads one commit of a branch
// into memory over smart HTTP and turns the tree under the link's rootDir into the files,
// entrypoint and npm dependencies functionbuild takes; ParsePush and VerifySignature read and
// authenticate a push delivery.
//
// The fetch speaks Git's smart-HTTP protocol through go-git's HTTP transport, used directly
// with a client made for each call (not installed as go-git's global protocol handler): that is
// what lets each fetch count and cap the bytes it downloads, and it limits the URL to http and
// https (no file://, ssh or git:// with a user-supplied URL). Objects go to go-git's in-memory
// storage and the tree is read from those objects; no worktree is checked out, so a file that
// is excluded or over the limits is never written anywhere.
package functiongit

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
)

// MaxDownload caps the bytes one Fetch may download (every HTTP response body of the fetch,
// counted together). The source itself is at most functionbuild.MaxBytes; the cap is for the
// packfile around it: the whole tree of the commit, or the branch's history when an older
// commit is asked for.
const MaxDownload = 100_000_000

// DefaultTimeout bounds a Fetch whose context has no deadline.
const DefaultTimeout = 2 * time.Minute

// maxDownload is MaxDownload; tests lower it.
var maxDownload int64 = MaxDownload

// Repo is a linked repository.
type Repo struct {
	URL     string // clone URL, e.g. https://github.com/acme/order-bot.git
	Branch  string // e.g. "main"
	RootDir string // "" or a relative folder ("services/bot"); no "..", no leading "/"
	// Username/Password: optional HTTP basic credentials (a token), never logged or put in errors.
	Username, Password string
}

// Snapshot is the source of one commit, ready for functionbuild.
type Snapshot struct {
	Commit       string            // full hex sha
	Message      string            // commit message, first line
	Files        map[string]string // paths relative to RootDir
	Entrypoint   string
	Dependencies map[string]string // never nil
}

// FetchError is a fetch that failed, with a one-line reason fit to show the user. It never
// holds the credentials.
type FetchError struct {
	// Reason is the message: "branch main not found", "the repository could not be reached:
	// connection refused", ...
	Reason string
	// Temporary is set when trying again later may succeed (the server could not be reached,
	// timed out or answered with a server error); the other reasons need the link or the
	// repository to change.
	Temporary bool

	err error
}

func (e *FetchError) Error() string { return e.Reason }

// Unwrap is the underlying error, if any (a context error, a transport error).
func (e *FetchError) Unwrap() error { return e.err }

func failf(format string, args ...any) *FetchError {
	return &FetchError{Reason: fmt.Sprintf(format, args...)}
}

// Fetch downloads the head of r.Branch, or commit when it is non-empty (a full sha or a prefix
// of at least 7 hex digits), and reads r.RootDir of it.
//
// The head is fetched shallowly: one commit, its tree, nothing else. A commit other than the
// head needs the branch's history to prove it is on the branch, so that case fetches the branch
// in full (within MaxDownload) and walks back from the head.
func Fetch(ctx context.Context, r Repo, commit string) (Snapshot, error) {
	if !ValidBranch(r.Branch) {
		return Snapshot{}, failf("branch %q is not a valid branch name", r.Branch)
	}
	if !ValidRootDir(r.RootDir) {
		return Snapshot{}, failf("rootDir %q is not a valid folder", r.RootDir)
	}
	commit = strings.ToLower(strings.TrimSpace(commit))
	if commit != "" && !validCommit(commit) {
		return Snapshot{}, failf("%q is not a commit id", commit)
	}
	ep, auth, err := endpoint(r)
	if err != nil {
		return Snapshot{}, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}

	f := &fetcher{ctx: ctx, repo: r, hasAuth: auth != nil}
	client := &http.Client{Transport: &countingTransport{base: http.DefaultTransport, f: f}}
	sess, err := githttp.NewClient(client).NewUploadPackSession(ep, auth)
	if err != nil {
		return Snapshot{}, f.fail(err)
	}
	defer sess.Close()

	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return Snapshot{}, f.fail(err)
	}
	refs, err := ar.AllReferences()
	if err != nil {
		return Snapshot{}, f.fail(err)
	}
	ref, err := refs.Reference(plumbing.NewBranchReferenceName(r.Branch))
	if err != nil || ref.Type() != plumbing.HashReference {
		return Snapshot{}, failf("branch %s not found", r.Branch)
	}
	head := ref.Hash()

	st := memory.NewStorage()
	var c *object.Commit
	if commit == "" || strings.HasPrefix(head.String(), commit) {
		if err := f.fetchPack(sess, ar, st, head, 1); err != nil {
			return Snapshot{}, err
		}
		if c, err = object.GetCommit(st, head); err != nil {
			return Snapshot{}, f.fail(err)
		}
	} else {
		if err := f.fetchPack(sess, ar, st, head, 0); err != nil {
			return Snapshot{}, err
		}
		if c, err = findOnBranch(ctx, st, head, commit, r.Branch); err != nil {
			return Snapshot{}, f.fail(err)
		}
	}
	snap, err := readCommit(st, c, r.RootDir)
	if err != nil {
		return Snapshot{}, f.fail(err)
	}
	return snap, nil
}

// validCommit: a full sha or an abbreviation of at least 7 hex digits.
func validCommit(s string) bool {
	if len(s) < 7 || len(s) > 40 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// endpoint parses the clone URL: http or https only. Credentials written into the URL are
// moved to the basic auth (r.Username/Password win) so that no URL the transport prints
// carries them.
func endpoint(r Repo) (*transport.Endpoint, transport.AuthMethod, error) {
	u, err := url.Parse(r.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, nil, failf("the repository URL is not an http or https URL")
	}
	user, pass := r.Username, r.Password
	if u.User != nil {
		if user == "" && pass == "" {
			user = u.User.Username()
			pass, _ = u.User.Password()
		}
		u.User = nil
	}
	ep, err := transport.NewEndpoint(u.String())
	if err != nil {
		return nil, nil, failf("the repository URL is not valid")
	}
	var auth transport.AuthMethod
	if user != "" || pass != "" {
		if user == "" {
			// GitHub takes a token as the password with any user name.
			user = "x-access-token"
		}
		auth = &githttp.BasicAuth{Username: user, Password: pass}
	}
	return ep, auth, nil
}

// fetcher is one Fetch: its context, what it has downloaded and how to explain a failure.
type fetcher struct {
	ctx        context.Context
	repo       Repo
	hasAuth    bool
	downloaded atomic.Int64
	overCap    atomic.Bool
}

// fetchPack asks for want (depth commits of it, or its whole history when depth is 0) and
// stores the packfile's objects in st.
func (f *fetcher) fetchPack(sess transport.UploadPackSession, ar *packp.AdvRefs, st *memory.Storage, want plumbing.Hash, depth int) (err error) {
	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	req.Wants = []plumbing.Hash{want}
	if depth > 0 {
		if !ar.Capabilities.Supports(capability.Shallow) {
			return failf("the Git server does not support shallow fetches")
		}
		req.Depth = packp.DepthCommits(depth)
		if err := req.Capabilities.Set(capability.Shallow); err != nil {
			return f.fail(err)
		}
	}
	if ar.Capabilities.Supports(capability.NoProgress) {
		if err := req.Capabilities.Set(capability.NoProgress); err != nil {
			return f.fail(err)
		}
	}
	resp, err := sess.UploadPack(f.ctx, req)
	if err != nil {
		return f.fail(err)
	}
	defer func() {
		if cerr := resp.Close(); cerr != nil && err == nil {
			err = f.fail(cerr)
		}
	}()
	if len(resp.Shallows) > 0 {
		if err := st.SetShallow(resp.Shallows); err != nil {
			return f.fail(err)
		}
	}
	var pack io.Reader = resp
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		pack = sideband.NewDemuxer(sideband.Sideband64k, resp)
	case req.Capabilities.Supports(capability.Sideband):
		pack = sideband.NewDemuxer(sideband.Sideband, resp)
	}
	if err := packfile.UpdateObjectStorage(st, pack); err != nil {
		return f.fail(err)
	}
	return nil
}

// errNotOnBranch and errAmbiguous are findOnBranch's answers, turned into reasons by fail.
var (
	errNotOnBranch = errors.New("not on branch")
	errAmbiguous   = errors.New("ambiguous commit")
)

// findOnBranch walks the history of head (every parent, so a commit merged into the branch is
// on it) for the commit whose sha starts with prefix.
func findOnBranch(ctx context.Context, st *memory.Storage, head plumbing.Hash, prefix, branch string) (*object.Commit, error) {
	hc, err := object.GetCommit(st, head)
	if err != nil {
		return nil, err
	}
	var found *object.Commit
	iter := object.NewCommitPreorderIter(hc, nil, nil)
	defer iter.Close()
	err = iter.ForEach(func(c *object.Commit) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !strings.HasPrefix(c.Hash.String(), prefix) {
			return nil
		}
		if found != nil && found.Hash != c.Hash {
			return &FetchError{Reason: fmt.Sprintf("commit %s is ambiguous on branch %s", prefix, branch), err: errAmbiguous}
		}
		found = c
		if len(prefix) == 40 {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	if found == nil {
		return nil, &FetchError{Reason: fmt.Sprintf("commit %s is not on branch %s", prefix, branch), err: errNotOnBranch}
	}
	return found, nil
}

var errStop = errors.New("stop")

// fail turns any error of the fetch into a *FetchError with a clean reason. Reasons name what
// went wrong in words of their own and never quote a URL or the credentials.
func (f *fetcher) fail(err error) error {
	var fe *FetchError
	if errors.As(err, &fe) {
		return fe
	}
	if f.overCap.Load() {
		return &FetchError{Reason: fmt.Sprintf("the repository is too large: more than %d bytes to download", maxDownload), err: err}
	}
	if cerr := f.ctx.Err(); cerr != nil {
		if errors.Is(cerr, context.DeadlineExceeded) {
			return &FetchError{Reason: "the repository could not be reached: timed out", Temporary: true, err: cerr}
		}
		return &FetchError{Reason: "the fetch was cancelled", Temporary: true, err: cerr}
	}
	reason, temporary := f.explain(err)
	return &FetchError{Reason: reason, Temporary: temporary, err: err}
}

const unreachable = "the repository could not be reached"

func (f *fetcher) explain(err error) (reason string, temporary bool) {
	switch {
	case has(err, func(e error) bool { return e == transport.ErrAuthenticationRequired }):
		if f.hasAuth {
			return "authentication failed: the credentials were refused", false
		}
		return "authentication required: the repository is private", false
	case has(err, func(e error) bool { return e == transport.ErrAuthorizationFailed }):
		return "access denied: the credentials do not give access to the repository", false
	case has(err, func(e error) bool { return e == transport.ErrRepositoryNotFound }):
		return "repository not found", false
	case has(err, func(e error) bool { return e == transport.ErrEmptyRemoteRepository }):
		return "the repository is empty", false
	case has(err, func(e error) bool { return e == syscall.ECONNREFUSED }):
		return unreachable + ": connection refused", true
	case has(err, func(e error) bool { return e == syscall.ECONNRESET }):
		return unreachable + ": connection reset", true
	case has(err, func(e error) bool { return e == syscall.EHOSTUNREACH || e == syscall.ENETUNREACH }):
		return unreachable + ": no route to host", true
	case has(err, func(e error) bool { _, ok := e.(*net.DNSError); return ok }):
		return unreachable + ": no such host", true
	case has(err, isCertError):
		return unreachable + ": the server's TLS certificate is not valid", false
	case has(err, func(e error) bool { ne, ok := e.(net.Error); return ok && ne.Timeout() }):
		return unreachable + ": timed out", true
	}
	var status int
	has(err, func(e error) bool {
		if he, ok := e.(*githttp.Err); ok && he.Response != nil {
			status = he.Response.StatusCode
			return true
		}
		return false
	})
	if status != 0 {
		return fmt.Sprintf("%s: the server answered HTTP %d", unreachable, status), status >= 500
	}
	if has(err, func(e error) bool { _, ok := e.(*net.OpError); return ok }) {
		return unreachable + ": network error", true
	}
	if has(err, func(e error) bool { _, ok := e.(*url.Error); return ok }) {
		return unreachable, true
	}
	return "the repository could not be read: " + f.scrub(err.Error()), false
}

func isCertError(e error) bool {
	switch e.(type) {
	case *tls.CertificateVerificationError, x509.UnknownAuthorityError, *x509.UnknownAuthorityError,
		x509.HostnameError, *x509.HostnameError, x509.CertificateInvalidError, *x509.CertificateInvalidError:
		return true
	}
	return false
}

// has reports whether match holds for err or any error it wraps, including the wrappers go-git
// uses that have no Unwrap method.
func has(err error, match func(error) bool) bool {
	if err == nil {
		return false
	}
	if match(err) {
		return true
	}
	switch e := err.(type) {
	case *plumbing.UnexpectedError:
		return has(e.Err, match)
	case *plumbing.PermanentError:
		return has(e.Err, match)
	case interface{ Unwrap() error }:
		return has(e.Unwrap(), match)
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			if has(inner, match) {
				return true
			}
		}
	}
	return false
}

// scrub removes the credentials from a message, should anything have quoted them.
func (f *fetcher) scrub(msg string) string {
	if f.repo.Password != "" {
		msg = strings.ReplaceAll(msg, f.repo.Password, "***")
	}
	if u, err := url.Parse(f.repo.URL); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			msg = strings.ReplaceAll(msg, p, "***")
		}
	}
	return msg
}

// countingTransport counts the bytes of every response body of one fetch and fails the read
// that goes over maxDownload.
type countingTransport struct {
	base http.RoundTripper
	f    *fetcher
}

var errTooLarge = errors.New("download limit reached")

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > maxDownload {
		resp.Body.Close()
		t.f.overCap.Store(true)
		return nil, errTooLarge
	}
	resp.Body = &countingBody{ReadCloser: resp.Body, f: t.f}
	return resp, nil
}

type countingBody struct {
	io.ReadCloser
	f *fetcher
}

func (b *countingBody) Read(p []byte) (int, error) {
	if b.f.overCap.Load() {
		return 0, errTooLarge
	}
	n, err := b.ReadCloser.Read(p)
	if b.f.downloaded.Add(int64(n)) > maxDownload {
		b.f.overCap.Store(true)
		return 0, errTooLarge
	}
	return n, err
}
