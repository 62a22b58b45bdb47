// Package optional tells a field that was left out of a partial update from one set to null.
package optional

import "encoding/json"

// Value is a field of a partial update: absent, null, or a value.
type Value[T any] struct {
	Set   bool
	Null  bool
	Value T
}

// UnmarshalJSON records that the field was present, and whether it was null.
func (o *Value[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Null = true
		return nil
	}
	return json.Unmarshal(b, &o.Value)
}
