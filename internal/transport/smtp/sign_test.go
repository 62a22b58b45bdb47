package smtp

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"strings"
	"syscall"
	"testing"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// BenchmarkDKIMSign is what one signature of a broadcast's mail (about 1 KB, headers and a text
// body) costs: RSA-2048 (every domain's key), Ed25519 (RFC 8463, the key a domain may add), and
// both, as a domain with both keys signs.
func BenchmarkDKIMSign(b *testing.B) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	mail := []byte("From: \"Bench News\" <news@bench.test>\r\nTo: <r000001@inbox.test>\r\nSubject: The benchmark\r\n" +
		"Date: Sat, 28 Nov 2026 08:00:00 +0000\r\nMessage-ID: <0123456789abcdef0123456789abcdef@bench.test>\r\n" +
		"MIME-Version: 1.0\r\nContent-Type: text/plain; charset=UTF-8\r\nContent-Transfer-Encoding: quoted-printable\r\n" +
		"List-Unsubscribe: <https://switchboard.example/u/abcdef>, <mailto:u-abcdef@mx.switchboard.example>\r\n" +
		"List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n\r\n" + strings.Repeat("Hi R1, the benchmark says hello, signed and sealed.\r\n", 12))
	headers := map[string]string{"List-Unsubscribe": "x", "List-Unsubscribe-Post": "x"}
	rsaDKIM := &transport.DKIMKey{Domain: "bench.test", Selector: "sb20261128", Signer: rsaKey}
	edDKIM := &transport.DKIMKey{Domain: "bench.test", Selector: "ed20261128", Signer: edKey}
	for _, c := range []struct {
		name string
		key  *transport.DKIMKey
	}{
		{"rsa-2048", rsaDKIM},
		{"ed25519", edDKIM},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			before := cpuTime(b)
			for b.Loop() {
				if _, err := sign(mail, c.key, headers); err != nil {
					b.Fatal(err)
				}
			}
			// The process's CPU time a signature, which a shared machine's load does not stretch as
			// it stretches ns/op.
			b.ReportMetric(float64(cpuTime(b)-before)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the CPU time the process has used, user and system, in nanoseconds.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
