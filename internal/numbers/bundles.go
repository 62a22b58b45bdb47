package numbers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
	"github.com/switchboard-io/switchboard/internal/regulatory"
)

// Regulatory bundles (docs/numbers.md#bundles): a country whose regulation asks something of a
// number's buyer sells its numbers only with a bundle the account's provider approved. The bundle
// is made from the project's records (an address of the country, documents of the accepted
// types) and the purchase's details, submitted once, and each purchase of the country's numbers
// of that type waits for it (status pending), then is bought with it.

// Bundler is a shop that submits bundles for review (a twilio account).
type Bundler interface {
	SubmitBundle(ctx context.Context, b BundleRequest) (sid string, err error)
	// BundleStatus is the review's state: BundlePending, BundleApproved or BundleRejected
	// (with the reason).
	BundleStatus(ctx context.Context, sid string) (status, reason string, err error)
}

// The states of a bundle's review.
const (
	BundlePending  = "pending"
	BundleApproved = "approved"
	BundleRejected = "rejected"
)

// BundleRequest is what a bundle is made of.
type BundleRequest struct {
	Country, Type, EndUserType string
	// EndUserName names the end user; Attributes are its fields, by their machine names.
	EndUserName string
	Attributes  map[string]string
	Address     *regulatory.Address
	Documents   []BundleDocument
}

// BundleDocument is a document of a bundle: its client documentType, its fields and its file.
type BundleDocument struct {
	Type, Name string
	Attributes map[string]string
	File       []byte
	MimeType   string
}

// Records are the project's regulatory records (the regulatory service).
type Records interface {
	BundleAddress(ctx context.Context, project, country string) (*regulatory.Address, error)
	BundleDocument(ctx context.Context, project string, types []string) (*regulatory.Document, []byte, error)
	Reviewed(ctx context.Context, project string, address *string, documents []string, verified bool, reason, sid string) error
}

// bundlePlan is how a purchase meets its regulation: an existing bundle, or one to submit.
type bundlePlan struct {
	existing *db.NumberBundle
	request  BundleRequest
	address  *string
	docs     []string
}

// planBundle finds what a purchase of a number of country and typ at acct needs: the project's
// approved (or pending) bundle of them, else one made of its records and details for the first
// kind of end user they satisfy. Nothing satisfied is 400 on phoneNumber naming what is missing.
func (s *Service) planBundle(ctx context.Context, project string, acct Account, country, typ string, rules []Rule, details map[string]string) (*bundlePlan, error) {
	b, err := db.Planned(s.Pool).UsableNumberBundle(ctx, db.UsableNumberBundleParams{Project: project, Provider: providerRef(acct.Namespace, acct.Provider),
		Country: country, NumberType: typ})
	if err == nil {
		return &bundlePlan{existing: &b}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, err
	}
	if _, ok := acct.Shop.(Bundler); !ok || s.Records == nil {
		return nil, apperror.InvalidFields(apperror.FieldError{Path: "phoneNumber", Message: fmt.Sprintf(
			"%s %s numbers need a regulatory bundle, which this account cannot submit", country, typ)})
	}
	var groups []string
	byUser := map[string][]Rule{}
	for _, r := range rules {
		if _, seen := byUser[r.EndUserType]; !seen {
			groups = append(groups, r.EndUserType)
		}
		byUser[r.EndUserType] = append(byUser[r.EndUserType], r)
	}
	var why []string
	for _, user := range groups {
		plan, missing, err := s.fill(ctx, project, country, typ, user, byUser[user], details)
		if err != nil {
			return nil, err
		}
		if len(missing) == 0 {
			return plan, nil
		}
		why = append(why, fmt.Sprintf("as a %s: %s", user, strings.Join(missing, ", ")))
	}
	return nil, apperror.InvalidFields(apperror.FieldError{Path: "phoneNumber", Message: fmt.Sprintf(
		"%s %s numbers need a regulatory bundle (GET /v1/phone-numbers/requirements?countryCode=%s&type=%s); missing %s",
		country, typ, country, typ, strings.Join(why, "; or "))})
}

// fill makes the bundle of one kind of end user from the project's records and the details;
// missing names what it lacks.
func (s *Service) fill(ctx context.Context, project, country, typ, user string, rules []Rule, details map[string]string) (*bundlePlan, []string, error) {
	plan := &bundlePlan{request: BundleRequest{Country: country, Type: typ, EndUserType: user, Attributes: map[string]string{}}}
	var missing []string
	needsAddress := slices.ContainsFunc(rules, func(r Rule) bool { return r.Kind == "address" })
	addr, err := s.Records.BundleAddress(ctx, project, country)
	if err != nil {
		return nil, nil, err
	}
	if needsAddress && addr == nil {
		missing = append(missing, "an address in "+country+" (POST /v1/addresses)")
	}
	if needsAddress && addr != nil {
		plan.request.Address, plan.address = addr, &addr.ID
	}
	value := func(field string) string {
		if v := strings.TrimSpace(details[field]); v != "" {
			return v
		}
		if addr == nil {
			return ""
		}
		switch field {
		case "business_name":
			return deref(addr.BusinessName)
		case "first_name":
			return deref(addr.FirstName)
		case "last_name":
			return deref(addr.LastName)
		}
		return ""
	}
	for _, r := range rules {
		switch r.Kind {
		case "textual":
			for _, f := range r.Fields {
				if v := value(f); v != "" {
					plan.request.Attributes[f] = v
				} else {
					missing = append(missing, fmt.Sprintf("the detail %q (details.%s)", f, f))
				}
			}
		case "document":
			doc, file, err := s.Records.BundleDocument(ctx, project, r.Accepted)
			if err != nil {
				return nil, nil, err
			}
			if doc == nil {
				missing = append(missing, fmt.Sprintf("a document of type %s (POST /v1/documents)", strings.Join(r.Accepted, " or ")))
				continue
			}
			d := BundleDocument{Type: doc.DocumentType, Name: doc.Name, File: file, MimeType: doc.MimeType, Attributes: map[string]string{}}
			for _, f := range r.Fields {
				if v := value(f); v != "" {
					d.Attributes[f] = v
				}
			}
			plan.request.Documents = append(plan.request.Documents, d)
			plan.docs = append(plan.docs, doc.ID)
		}
	}
	plan.request.EndUserName = cmp.Or(plan.request.Attributes["business_name"],
		strings.TrimSpace(plan.request.Attributes["first_name"]+" "+plan.request.Attributes["last_name"]), project)
	return plan, missing, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// submitBundle submits plan's bundle at acct and records it pending.
func (s *Service) submitBundle(ctx context.Context, project string, acct Account, plan *bundlePlan) (db.NumberBundle, error) {
	sid, err := acct.Shop.(Bundler).SubmitBundle(ctx, plan.request)
	if err != nil {
		return db.NumberBundle{}, err
	}
	id, err := randid.Name("bnd_", 20)
	if err != nil {
		return db.NumberBundle{}, err
	}
	return db.Planned(s.Pool).InsertNumberBundle(ctx, db.InsertNumberBundleParams{ID: id, Project: project,
		Provider: providerRef(acct.Namespace, acct.Provider), Country: plan.request.Country, NumberType: plan.request.Type,
		EndUserType: plan.request.EndUserType, BundleSid: sid, Address: plan.address, Documents: orEmpty(plan.docs), Now: s.now()})
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// reviewBundles asks the accounts how their pending bundles' reviews went: an approved one buys
// the purchases waiting for it and verifies its records; a rejected one fails them (refunded)
// and rejects its documents with the reason.
func (r *Renewer) reviewBundles(ctx context.Context) error {
	s := r.Service
	q := db.Planned(s.Pool)
	pending, err := q.PendingNumberBundles(ctx, renewBatch)
	if err != nil {
		return err
	}
	var errs []error
	for _, b := range pending {
		ns, name, _ := strings.Cut(b.Provider, "/")
		shop, err := s.Shops.ShopAt(ctx, ns, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		bundler, ok := shop.(Bundler)
		if !ok {
			continue
		}
		status, reason, err := bundler.BundleStatus(ctx, b.BundleSid)
		if err != nil || status == BundlePending {
			errs = append(errs, err)
			continue
		}
		var why *string
		if reason != "" {
			why = &reason
		}
		if err := q.DecideNumberBundle(ctx, db.DecideNumberBundleParams{ID: b.ID, Status: status, FailureReason: why, Now: s.now()}); err != nil {
			errs = append(errs, err)
			continue
		}
		if s.Records != nil {
			errs = append(errs, s.Records.Reviewed(ctx, b.Project, b.Address, b.Documents, status == BundleApproved, reason, b.BundleSid))
		}
		waiting, err := q.PurchasesAwaitingBundle(ctx, &b.ID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, row := range waiting {
			errs = append(errs, s.afterReview(ctx, shop, row, b, status, reason))
		}
	}
	return errors.Join(errs...)
}

// afterReview buys a purchase whose bundle was approved, or fails it (refunded) when it was not.
func (s *Service) afterReview(ctx context.Context, shop Shop, row db.PhoneNumber, b db.NumberBundle, status, reason string) error {
	if status != BundleApproved {
		return s.fail(ctx, row, "the regulatory bundle was rejected: "+reason, nil)
	}
	return s.buyWithBundle(ctx, shop, row, b.BundleSid)
}

// buyWithBundle buys a purchase's number with its approved bundle. A refusal fails it
// (refunded); no answer leaves it to the settling round, which asks the account.
func (s *Service) buyWithBundle(ctx context.Context, shop Shop, row db.PhoneNumber, bundleSID string) error {
	seller, ok := shop.(Seller)
	if !ok {
		return s.fail(ctx, row, "the account sells no numbers", nil)
	}
	if err := db.Planned(s.Pool).TouchPhoneNumber(ctx, db.TouchPhoneNumberParams{ID: row.ID, Now: s.now()}); err != nil {
		return err
	}
	bought, err := seller.Buy(ctx, row.Number, deref(row.DisplayName), bundleSID)
	switch {
	case errors.Is(err, ErrUnavailable), errors.Is(err, ErrNeedsBundle), apperror.As(err) != nil:
		return s.fail(ctx, row, err.Error(), nil)
	case err != nil:
		return err // the settling round asks the account (the bundle is approved now)
	}
	_, err = s.finish(ctx, row, bought, row.DisplayName)
	return err
}
