package apikey

import (
	"fmt"
	"slices"
)

// Permission is a scope a key may hold (spec: Authentication 5).
type Permission string

const (
	PermissionAll            Permission = "*"
	PermissionMessagesSend   Permission = "messages:send"
	PermissionMessagesRead   Permission = "messages:read"
	PermissionTemplatesRead  Permission = "templates:read"
	PermissionTemplatesWrite Permission = "templates:write"
	PermissionContactsRead   Permission = "contacts:read"
	PermissionContactsWrite  Permission = "contacts:write"
)

// Permissions lists every permission.
var Permissions = []Permission{
	PermissionAll, PermissionMessagesSend, PermissionMessagesRead, PermissionTemplatesRead,
	PermissionTemplatesWrite, PermissionContactsRead, PermissionContactsWrite,
}

// ParsePermissions checks names against the known permissions; none means "*".
func ParsePermissions(names []string) ([]string, error) {
	if len(names) == 0 {
		return []string{string(PermissionAll)}, nil
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if !slices.Contains(Permissions, Permission(n)) {
			return nil, fmt.Errorf("unknown permission %q; known: %v", n, Permissions)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// Allows tells whether the key holds p; "*" holds every permission.
func (k Key) Allows(p Permission) bool {
	return slices.Contains(k.Permissions, string(PermissionAll)) || slices.Contains(k.Permissions, string(p))
}
