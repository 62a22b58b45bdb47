package registry

import (
	"strings"
	"sync"
)

// versioned keeps one value per version of what it is built from (a Provider and its Secret, a
// key's Secret): built on first use, and an older version of the same object dropped when a
// newer one is built (and closed, when it has a Close: an SMTP transport's open connections).
type versioned[T any] struct {
	mu     sync.Mutex
	values map[string]T
}

// get returns the value of key, building it when absent; owner prefixes the keys of every
// version of the same object. A failed build is not kept.
func (v *versioned[T]) get(key, owner string, build func() (T, error)) (T, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if t, ok := v.values[key]; ok {
		return t, nil
	}
	t, err := build()
	if err != nil {
		return t, err
	}
	if v.values == nil {
		v.values = map[string]T{}
	}
	for k := range v.values {
		if strings.HasPrefix(k, owner) {
			if c, ok := any(v.values[k]).(interface{ Close() }); ok {
				go c.Close() // off the lock: it may wait for a relay's answer
			}
			delete(v.values, k) // an older version of the same object
		}
	}
	v.values[key] = t
	return t, nil
}
