package emailcheck

import (
	"bufio"
	_ "embed"
	"fmt"
	"io"
	"strings"
)

//go:embed disposable.txt
var shippedDisposable string

// roleLocalParts are local parts that name a function rather than a person: mail to them
// reaches whoever staffs it, or nobody, and complaints from them weigh more. Advisory only.
var roleLocalParts = map[string]bool{
	"abuse": true, "admin": true, "administrator": true, "billing": true, "compliance": true, "contact": true,
	"help": true, "hostmaster": true, "info": true, "it": true, "legal": true, "mailer-daemon": true,
	"marketing": true, "no-reply": true, "noc": true, "noreply": true, "office": true, "postmaster": true,
	"privacy": true, "root": true, "sales": true, "security": true, "support": true, "sysadmin": true,
	"team": true, "webmaster": true,
}

// IsRole tells whether the address's local part names a function (info@, support@, …); a
// +tag is ignored.
func IsRole(address string) bool {
	local, _, _ := strings.Cut(strings.ToLower(address), "@")
	local, _, _ = strings.Cut(local, "+")
	return roleLocalParts[local]
}

// Disposable is a set of throwaway mail domains: the list Switchboard ships, and the
// installation's own.
type Disposable map[string]bool

// ShippedDisposable is the list Switchboard ships.
func ShippedDisposable() Disposable {
	d := Disposable{}
	if err := d.Add(strings.NewReader(shippedDisposable)); err != nil {
		panic(err) // the embedded list is part of the build
	}
	return d
}

// Add reads domains, one per line (# starts a comment), into d.
func (d Disposable) Add(r io.Reader) error {
	s := bufio.NewScanner(r)
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.ContainsAny(line, " \t@/") {
			return fmt.Errorf("line %d: %q is not a domain", n, line)
		}
		d[strings.ToLower(strings.TrimSuffix(line, "."))] = true
	}
	return s.Err()
}

// Has tells whether domain, or a domain it is under, is disposable.
func (d Disposable) Has(domain string) bool {
	for {
		if d[domain] {
			return true
		}
		_, parent, ok := strings.Cut(domain, ".")
		if !ok || !strings.Contains(parent, ".") {
			return false
		}
		domain = parent
	}
}
