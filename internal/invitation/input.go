package invitation

import (
	"fmt"
	"net/mail"
	"strings"
	"unicode/utf8"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/addr"
	"github.com/switchboard-io/switchboard/internal/apperror"
)

// Input is the invitation create request (spec; WIRE.md §8); nil fields were not given.
type Input struct {
	ClientName, ClientEmail, ClientPhone *string
	ConnectionType, PhoneNumberID        *string
	ExpiresInDays                        *int
	AllowedPhoneCountries                *[]string
}

// Bounds of the create request (spec: Limits).
const (
	maxClientName     = 100
	minDays, maxDays  = 1, 30
	defaultExpiryDays = 7
)

// specOf checks the request as the spec does, every field, and returns the resource's spec.
func specOf(in Input) (v1alpha1.InvitationSpec, []apperror.FieldError) {
	var errs []apperror.FieldError
	bad := func(path, format string, args ...any) {
		errs = append(errs, apperror.FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	spec := v1alpha1.InvitationSpec{ConnectionType: v1alpha1.ConnectionWhatsApp, ExpiresInDays: defaultExpiryDays}
	if in.ConnectionType != nil {
		switch ct := v1alpha1.ConnectionType(*in.ConnectionType); ct {
		case v1alpha1.ConnectionWhatsApp, v1alpha1.ConnectionMessenger:
			spec.ConnectionType = ct
		default:
			bad("connectionType", "must be whatsapp_waba or messenger")
		}
	}
	if v := in.ClientName; v != nil {
		if utf8.RuneCountInString(*v) > maxClientName {
			bad("clientName", "must be at most %d characters", maxClientName)
		}
		spec.ClientName = *v
	}
	if v := in.ClientEmail; v != nil && *v != "" {
		if a, err := mail.ParseAddress(*v); err != nil || a.Address != *v || len(*v) > 254 {
			bad("clientEmail", "must be an email address")
		}
		spec.ClientEmail = *v
	}
	if v := in.ClientPhone; v != nil && *v != "" {
		if !addr.IsE164(*v) {
			bad("clientPhone", "must be a phone number in E.164 format, e.g. +14155550100")
		}
		spec.ClientPhone = *v
	}
	if v := in.ExpiresInDays; v != nil {
		if *v < minDays || *v > maxDays {
			bad("expiresInDays", "must be from %d to %d", minDays, maxDays)
		}
		spec.ExpiresInDays = int32(*v)
	}
	whatsAppOnly := spec.ConnectionType != v1alpha1.ConnectionWhatsApp
	if v := in.PhoneNumberID; v != nil {
		switch {
		case whatsAppOnly:
			bad("phoneNumberId", "is only for whatsapp_waba invitations")
		case *v == "" || len(*v) > 64 || strings.Trim(*v, "0123456789") != "":
			bad("phoneNumberId", "must be a WhatsApp phone number id (digits)")
		}
		spec.PhoneNumberID = *v
	}
	if v := in.AllowedPhoneCountries; v != nil {
		if whatsAppOnly {
			bad("allowedPhoneCountries", "is only for whatsapp_waba invitations")
		}
		seen := map[string]bool{}
		for i, c := range *v {
			up := strings.ToUpper(c)
			if len(c) != 2 || strings.Trim(up, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
				bad(fmt.Sprintf("allowedPhoneCountries[%d]", i), "must be a two-letter country code (ISO 3166-1 alpha-2)")
				continue
			}
			if !seen[up] {
				seen[up] = true
				spec.AllowedPhoneCountries = append(spec.AllowedPhoneCountries, up)
			}
		}
	}
	return spec, errs
}
