package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/switchboard-io/switchboard/internal/apperror"
)

// defaultMaxBody bounds request bodies of routes that set no limit of their own.
const defaultMaxBody = 1 << 20

// decodeJSON reads the request's JSON object into dst, a pointer to a struct. It answers
// unsupported_media_type (415) when the body says it is not JSON, invalid_json when the body is
// not JSON, invalid_request when it is JSON but not an object, when fields have the wrong type
// or when a string holds NUL (all of them listed, by path), request_too_large past the route's
// limit, request_timeout when the body arrives too slowly (paceBodies). An empty body is an
// empty object when optional is true. Unknown fields are ignored.
func decodeJSON(r *http.Request, dst any, optional bool) error {
	if r.ContentLength != 0 {
		if err := checkJSONType(r.Header.Get("Content-Type")); err != nil {
			return err
		}
	}
	body, err := readBody(r)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return bodyTooLarge(tooLarge.Limit)
		}
		if errors.Is(err, errBodyTooSlow) {
			return bodyTooSlow()
		}
		return fmt.Errorf("read request body: %w", err)
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		if optional {
			return nil
		}
		return apperror.InvalidFields(apperror.FieldError{Path: "", Message: "a JSON object body is required"})
	}
	if !json.Valid(body) {
		return apperror.New(apperror.Invalid, "invalid_json", "The request body is not valid JSON.")
	}
	if body[0] != '{' {
		return apperror.InvalidFields(apperror.FieldError{Path: "", Message: "the body must be a JSON object"})
	}
	var fields map[string]bodyField
	if err := json.Unmarshal(body, &fields); err != nil {
		return apperror.New(apperror.Invalid, "invalid_json", "The request body is not valid JSON.")
	}
	if errs := decodeFields(fields, dst); len(errs) > 0 {
		return apperror.InvalidFields(errs...)
	}
	return nil
}

// readBody reads the whole request body into one buffer, sized from Content-Length when the
// client declares it (the route's limit has already bounded it), so a large body is not copied
// as the buffer grows.
func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength <= 0 {
		return io.ReadAll(r.Body)
	}
	// One byte more than declared, so the read that finds the end needs no larger buffer.
	buf := make([]byte, 0, r.ContentLength+1)
	for {
		n, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // longer than declared: grow as io.ReadAll does
		}
	}
}

// bodyField is one top-level field of a request body: a view into the body, not a copy
// (json.RawMessage copies), so a large field (an attachment's base64) is held once while it
// is decoded. The body outlives the fields and is never written to.
type bodyField []byte

// UnmarshalJSON keeps b as it is: json.Unmarshal passes a slice of its own input, the body.
func (f *bodyField) UnmarshalJSON(b []byte) error {
	*f = b
	return nil
}

// decodeFields fills dst's fields one by one, so every field of the wrong type is reported, not
// only the first. An embedded struct's fields count as dst's own, as encoding/json has them.
func decodeFields(fields map[string]bodyField, dst any) []apperror.FieldError {
	return decodeStruct(fields, reflect.ValueOf(dst).Elem())
}

func decodeStruct(fields map[string]bodyField, v reflect.Value) []apperror.FieldError {
	t := v.Type()
	var errs []apperror.FieldError
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get("json") == "" {
			errs = append(errs, decodeStruct(fields, v.Field(i))...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		raw, ok := fields[name]
		if !ok {
			continue
		}
		if nul := nulStrings(name, raw); len(nul) > 0 {
			errs = append(errs, nul...)
			continue
		}
		if err := json.Unmarshal(raw, v.Field(i).Addr().Interface()); err != nil {
			errs = append(errs, apperror.FieldError{Path: fieldPath(name, err), Message: typeMessage(err)})
		}
	}
	return errs
}

func fieldPath(name string, err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return name + "." + te.Field
	}
	return name
}

func typeMessage(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("must be %s, not %s", jsonKind(te.Type), te.Value)
	}
	return "has an invalid value"
}

func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

func bodyTooLarge(limit int64) *apperror.Error {
	e := apperror.New(apperror.TooLarge, "request_too_large",
		fmt.Sprintf("The request body is larger than this endpoint accepts (%d bytes).", limit))
	e.Details = map[string]any{"limit": limit}
	return e
}

// checkJSONType accepts a body declared as JSON (application/json or application/*+json, with
// any parameters, even malformed ones) or not declared at all: clients of the action POSTs send
// no Content-Type. Anything else is 415 unsupported_media_type, not parsed as JSON regardless.
func checkJSONType(header string) error {
	if header == "" {
		return nil
	}
	mediaType, _, err := mime.ParseMediaType(header)
	if (err == nil || errors.Is(err, mime.ErrInvalidMediaParameter)) && (mediaType == "application/json" ||
		strings.HasPrefix(mediaType, "application/") && strings.HasSuffix(mediaType, "+json")) {
		return nil
	}
	e := apperror.New(apperror.Invalid, codeUnsupportedMediaType,
		"The body must be JSON: send it with Content-Type: application/json.")
	e.Details = map[string]any{"expected": "application/json"}
	return e
}

// nulEscape is how a NUL character appears in JSON: a raw control character is not valid JSON,
// and an escape's hex digits have no case.
var nulEscape = []byte(`\u0000`)

// nulStrings lists every string of the field's JSON value, at any depth, that holds NUL (U+0000),
// by path (name, name.key, name[1]); an object key holding NUL is reported on its object.
// Postgres stores no NUL in text or jsonb, so such a value is the caller's mistake, refused here
// once for every handler. A value without the escape is not walked.
func nulStrings(name string, raw []byte) []apperror.FieldError {
	if !bytes.Contains(raw, nulEscape) {
		return nil
	}
	var errs []apperror.FieldError
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := walkNUL(dec, name, &errs); err != nil {
		return nil // not valid JSON: decodeJSON has checked the body, so this does not happen
	}
	return errs
}

func walkNUL(dec *json.Decoder, path string, errs *[]apperror.FieldError) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case string:
		if strings.IndexByte(t, 0) >= 0 {
			*errs = append(*errs, apperror.FieldError{Path: path, Message: "must not contain the NUL character (U+0000)"})
		}
	case json.Delim:
		switch t {
		case '{':
			for dec.More() {
				tok, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := tok.(string)
				if strings.IndexByte(key, 0) >= 0 {
					*errs = append(*errs, apperror.FieldError{Path: path, Message: "has a key that contains the NUL character (U+0000)"})
					var skip json.RawMessage
					if err := dec.Decode(&skip); err != nil {
						return err
					}
					continue
				}
				if err := walkNUL(dec, path+"."+key, errs); err != nil {
					return err
				}
			}
		case '[':
			for i := 0; dec.More(); i++ {
				if err := walkNUL(dec, path+"["+strconv.Itoa(i)+"]", errs); err != nil {
					return err
				}
			}
		}
		if t == '{' || t == '[' {
			if _, err := dec.Token(); err != nil { // the closing delimiter
				return err
			}
		}
	}
	return nil
}
