package numbers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nyaruka/phonenumbers"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/addr"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/phonenumber"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// Buying and owning numbers. A bought number is a PhoneNumber resource (who owns it: the API
// makes it, `kubectl delete` releases it) and a row of phone_numbers (who pays for it: its
// first month is charged in the purchase's transaction, each month after by the Renewer).

// Seller is a shop that sells its numbers (a twilio account).
type Seller interface {
	// Buy buys number for the account (with bundleSID, an approved regulatory bundle, for the
	// numbers that need one), its inbound messages and calls pointed at Switchboard. A refusal
	// that buying again would meet too wraps ErrUnavailable or ErrNeedsBundle.
	Buy(ctx context.Context, number, name, bundleSID string) (Bought, error)
	// Find tells whether the account holds number (a purchase whose answer was lost).
	Find(ctx context.Context, number string) (Bought, bool, error)
}

// Bought is a number an account bought.
type Bought struct {
	// SID is the account's id of the number (Twilio: PN…).
	SID             string
	SMS, Voice, MMS bool
}

// The refusals of a purchase that another try would meet too.
var (
	ErrUnavailable = errors.New("the number is not for sale any more")
	ErrNeedsBundle = errors.New("the number's country asks for a regulatory bundle")
)

// Account is where a project's live numbers are bought: a twilio Provider's account.
type Account struct {
	Shop Shop
	// Namespace and Provider name the twilio Provider.
	Namespace, Provider string
}

// Senders gives numbers to senders (the sender service, as PATCH /v1/senders/{id} does).
type Senders interface {
	// SetNumber gives sender number; "" takes its number away. Refusals are *apperror.Error.
	SetNumber(ctx context.Context, project, sender, number string) error
}

// Owned is a number the project owns, as the API shows it (the client's OwnedPhoneNumber).
type Owned struct {
	ID              string       `json:"id"`
	PhoneNumber     string       `json:"phoneNumber"`
	Capabilities    []string     `json:"capabilities"`
	CreatedAt       time.Time    `json:"createdAt"`
	Pricing         OwnedPricing `json:"pricing"`
	Status          string       `json:"status"`
	Name            string       `json:"name,omitempty"`
	SenderID        string       `json:"senderId,omitempty"`
	NextRenewalDate *time.Time   `json:"nextRenewalDate,omitempty"`
	UpdatedAt       *time.Time   `json:"updatedAt,omitempty"`
}

// OwnedPricing is what an owned number costs: cents and USD, as the client has it.
type OwnedPricing struct {
	MonthlyCost  float64 `json:"monthlyCost"`
	MonthlyPrice float64 `json:"monthlyPrice"`
	UpfrontCost  float64 `json:"upfrontCost"`
	IsFreeNumber bool    `json:"isFreeNumber"`
}

// The statuses of an owned number (the client's PhoneNumberStatus).
const (
	StatusActive    = "active"
	StatusSuspended = "suspended"
	StatusPending   = "pending"
)

// OwnedStatuses are the statuses a list filters by.
var OwnedStatuses = []string{StatusActive, StatusSuspended, StatusPending}

// Purchase is POST /v1/phone-numbers.
type Purchase struct {
	PhoneNumber string
	Name        *string
	// Details are the values a country's regulation asks of the buyer that the project's
	// records do not hold (business_website…), by the field's name (Switchboard's extension).
	Details map[string]string
}

// Change is PATCH /v1/phone-numbers/{id}: a nil field is unchanged, a pointer to "" clears it.
type Change struct {
	Name, SenderID *string
}

const maxNameLength = 64

// purchaseTimeout bounds the provider's purchase: past it, the Renewer settles the purchase.
const purchaseTimeout = 30 * time.Second

func (s *Service) now() time.Time {
	if s.Clock != nil {
		return s.Clock().UTC()
	}
	return time.Now().UTC()
}

// nextMonth is when a month that starts at t is paid until.
func (s *Service) nextMonth(t time.Time) time.Time {
	if s.Month > 0 {
		return t.Add(s.Month)
	}
	return t.AddDate(0, 1, 0)
}

// Buy buys a number for the key's project: a test key one of the sandbox's (free), a live key
// one its telephony account sells, priced by the PriceList, the first month and the upfront
// price charged in the purchase's transaction (402 when the balance cannot pay: nothing bought).
func (s *Service) Buy(ctx context.Context, key apikey.Key, in Purchase) (Owned, error) {
	var errs []apperror.FieldError
	if !addr.IsE164(in.PhoneNumber) {
		errs = append(errs, apperror.FieldError{Path: "phoneNumber", Message: "must be an E.164 number, e.g. +14155550100"})
	}
	if in.Name != nil && len([]rune(*in.Name)) > maxNameLength {
		errs = append(errs, apperror.FieldError{Path: "name", Message: fmt.Sprintf("must be at most %d characters", maxNameLength)})
	}
	if len(errs) > 0 {
		return Owned{}, apperror.InvalidFields(errs...)
	}
	project, number := key.Project, in.PhoneNumber
	if v, err := phonenumber.Check(ctx, s.Reader, project, number); err != nil {
		return Owned{}, err
	} else if v.State == phonenumber.Owned && !key.TestMode() {
		return Owned{}, apperror.New(apperror.Conflict, "conflict", fmt.Sprintf("%s is this project's already (GET /v1/phone-numbers).", number))
	}
	if held, err := db.Planned(s.Pool).HeldPhoneNumber(ctx, db.HeldPhoneNumberParams{Project: project, Number: number}); err == nil {
		// A purchase whose PhoneNumber was deleted (kubectl delete) holds nothing any more: its
		// billing ends now rather than at its next renewal.
		if gone, err := s.resourceGone(ctx, s.Reader, held); err != nil {
			return Owned{}, err
		} else if !gone {
			return Owned{}, apperror.New(apperror.Conflict, "conflict", fmt.Sprintf("%s is this project's already, or being bought (%s).", number, held.Resource))
		}
		if err := db.Planned(s.Pool).ReleasePhoneNumber(ctx, db.ReleasePhoneNumberParams{ID: held.ID, Now: s.now()}); err != nil {
			return Owned{}, err
		}
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return Owned{}, err
	}

	shop, acct := Shop(s.Sandbox), Account{}
	if key.TestMode() {
		if !v1alpha1.IsSandboxNumber(number) {
			return Owned{}, apperror.InvalidFields(apperror.FieldError{Path: "phoneNumber",
				Message: "test keys buy the sandbox's numbers (GET /v1/phone-numbers/available with a test key); buy real numbers with a live key"})
		}
	} else {
		var err error
		if acct, err = s.Shops.ShopOf(ctx, project); err != nil {
			return Owned{}, err
		}
		shop = acct.Shop
	}
	offer, country, typ, err := s.find(ctx, shop, number)
	if err != nil {
		return Owned{}, err
	}
	var monthly, upfront billing.Micros
	var payer billing.Account
	var plan *bundlePlan
	if !key.TestMode() {
		list, err := s.Prices.For(ctx, project)
		if err != nil {
			return Owned{}, err
		}
		var ok bool
		if monthly, upfront, ok, err = billing.NumberQuote(list, country, typ); err != nil {
			return Owned{}, err
		} else if !ok {
			return Owned{}, apperror.InvalidFields(apperror.FieldError{Path: "phoneNumber",
				Message: fmt.Sprintf("%s numbers of %s are not for sale here: the PriceList prices none", typ, country)})
		}
		if rules, err := s.rulesOf(ctx, shop, country, typ); err != nil {
			return Owned{}, err
		} else if len(rules) > 0 {
			if plan, err = s.planBundle(ctx, project, acct, country, typ, rules, in.Details); err != nil {
				return Owned{}, err
			}
		}
		if payer, err = s.Money.Account(ctx, project); err != nil {
			return Owned{}, err
		}
	}

	// The PhoneNumber is the project's own claim when its own account buys the number, else the
	// installation's assignment of it to the project.
	namespace, provider := project, ""
	if !key.TestMode() {
		namespace, provider = acct.Namespace, acct.Provider
	}
	id, err := randid.Name("pnb_", 20)
	if err != nil {
		return Owned{}, err
	}
	now := s.now()
	row, err := s.reserve(ctx, db.InsertPhoneNumberParams{ID: id, Project: project, Number: number, TestMode: key.TestMode(),
		Namespace: namespace, Resource: v1alpha1.PhoneNumberName(number), Provider: providerRef(namespace, provider),
		NumberType: typ, Country: country, Capabilities: capabilityNames(offer.SMS, offer.Voice, offer.MMS),
		MonthlyMicros: int64(monthly), UpfrontMicros: int64(upfront), RenewsAt: s.nextMonth(now), Now: now}, payer, monthly+upfront)
	if err != nil {
		return Owned{}, err
	}

	bundleSID := ""
	if plan != nil {
		b := plan.existing
		if b == nil {
			submitted, err := s.submitBundle(ctx, project, acct, plan)
			if err != nil {
				if e := apperror.As(err); e != nil {
					return Owned{}, s.fail(ctx, row, err.Error(), err)
				}
				return Owned{}, s.fail(ctx, row, err.Error(), apperror.InvalidFields(apperror.FieldError{Path: "phoneNumber",
					Message: "the regulatory bundle was not accepted for review: " + err.Error()}))
			}
			b = &submitted
		}
		if b.Status != BundleApproved {
			// The purchase waits for the review: the renewer buys it once the bundle is approved.
			if err := db.Planned(s.Pool).SetPhoneNumberBundle(ctx, db.SetPhoneNumberBundleParams{ID: row.ID, Bundle: &b.ID, DisplayName: in.Name}); err != nil {
				return Owned{}, err
			}
			row.Bundle, row.DisplayName = &b.ID, in.Name
			return s.awaiting(row), nil
		}
		bundleSID = b.BundleSid
	}
	bought := Bought{SMS: offer.SMS, Voice: offer.Voice, MMS: offer.MMS}
	if !key.TestMode() {
		seller, ok := shop.(Seller)
		if !ok {
			return Owned{}, s.fail(ctx, row, "this account sells no numbers", apperror.New(apperror.Invalid, "invalid_request", "This project's telephony account sells no numbers."))
		}
		name := ""
		if in.Name != nil {
			name = *in.Name
		}
		buyCtx, cancel := context.WithTimeout(ctx, purchaseTimeout)
		bought, err = seller.Buy(buyCtx, number, name, bundleSID)
		cancel()
		switch {
		case errors.Is(err, ErrUnavailable):
			return Owned{}, s.fail(ctx, row, err.Error(), apperror.InvalidFields(apperror.FieldError{Path: "phoneNumber",
				Message: number + " is not for sale any more: search again (GET /v1/phone-numbers/available)"}))
		case errors.Is(err, ErrNeedsBundle):
			return Owned{}, s.fail(ctx, row, err.Error(), apperror.InvalidFields(apperror.FieldError{Path: "phoneNumber",
				Message: fmt.Sprintf("the provider asks for a regulatory bundle for %s (GET /v1/phone-numbers/requirements?countryCode=%s&type=%s)", number, country, typ)}))
		case apperror.As(err) != nil:
			return Owned{}, s.fail(ctx, row, err.Error(), err)
		case err != nil:
			// The outcome is unknown: the Renewer asks the account, then finishes or refunds it.
			s.Log.Error(err, "a number's purchase has no answer: it is settled later", "purchase", row.ID, "provider", row.Provider)
			return Owned{}, apperror.New(apperror.Unavailable, "provider_unavailable",
				"The telephony account did not answer the purchase; it is checked again within minutes (GET /v1/phone-numbers shows the number once bought, and the money comes back if not).")
		}
	}
	pn, err := s.finish(ctx, row, bought, in.Name)
	if err != nil {
		return Owned{}, err
	}
	return s.view(ctx, pn, nil)
}

// resourceGone tells whether an active purchase's PhoneNumber is gone (deleted, or being
// deleted). A purchase still buying, or waiting for its bundle, has none yet.
func (s *Service) resourceGone(ctx context.Context, r client.Reader, row db.PhoneNumber) (bool, error) {
	if row.State == "buying" {
		return false, nil
	}
	var pn v1alpha1.PhoneNumber
	err := r.Get(ctx, client.ObjectKey{Namespace: row.Namespace, Name: row.Resource}, &pn)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return !pn.DeletionTimestamp.IsZero() || pn.Annotations[v1alpha1.PhoneNumberPurchaseAnnotation] != row.ID, nil
}

// providerRef names a Provider as the rows do: namespace/name; "" for the sandbox.
func providerRef(namespace, name string) string {
	if name == "" {
		return ""
	}
	return namespace + "/" + name
}

// find is what shop offers of number: the offer, its country and its type.
func (s *Service) find(ctx context.Context, shop Shop, number string) (Offer, string, string, error) {
	country, types := "US", Types
	if parsed, err := phonenumbers.Parse(number, ""); err == nil {
		if r := phonenumbers.GetRegionCodeForNumber(parsed); r != "" && r != "ZZ" {
			country = r
		} else if r := phonenumbers.GetRegionCodeForCountryCode(int(parsed.GetCountryCode())); r != "" && r != "ZZ" {
			country = r // a number the plan does not know (a reserved range): its calling code's main country
		}
		// The type the number plan says first: fewer searches.
		switch phonenumbers.GetNumberType(parsed) {
		case phonenumbers.TOLL_FREE:
			types = []string{TypeTollFree, TypeLocal, TypeMobile}
		case phonenumbers.MOBILE:
			types = []string{TypeMobile, TypeLocal, TypeTollFree}
		default:
			types = []string{TypeLocal, TypeMobile, TypeTollFree}
		}
	}
	if v1alpha1.IsSandboxNumber(number) {
		country = "US"
	}
	digits := strings.TrimPrefix(number, "+")
	if cc := phonenumbers.GetCountryCodeForRegion(country); cc > 0 {
		digits = strings.TrimPrefix(digits, fmt.Sprint(cc))
	}
	for _, typ := range types {
		offers, err := shop.Search(ctx, Query{Country: country, Type: typ, Contains: digits, Limit: MaxLimit})
		if err != nil {
			return Offer{}, "", "", err
		}
		for _, o := range offers {
			if o.PhoneNumber == number {
				return o, country, typ, nil
			}
		}
	}
	return Offer{}, "", "", apperror.InvalidFields(apperror.FieldError{Path: "phoneNumber",
		Message: number + " is not for sale: search for one (GET /v1/phone-numbers/available)"})
}

// rulesOf is what the regulations of country ask of a buyer of its numbers of type typ.
func (s *Service) rulesOf(ctx context.Context, shop Shop, country, typ string) ([]Rule, error) {
	reg, ok := shop.(Regulator)
	if !ok {
		return nil, nil
	}
	return reg.Rules(ctx, country, typ)
}

// reserve records the purchase as buying and charges its first month and upfront price, in one
// transaction: 402 when the balance cannot pay, and nothing recorded.
func (s *Service) reserve(ctx context.Context, p db.InsertPhoneNumberParams, payer billing.Account, amount billing.Micros) (db.PhoneNumber, error) {
	var row db.PhoneNumber
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		var err error
		row, err = db.Planned(tx).InsertPhoneNumber(ctx, p)
		if errors.Is(err, pgx.ErrNoRows) {
			return apperror.New(apperror.Conflict, "conflict", p.Number+" is being bought for this project already.")
		}
		if err != nil || p.TestMode || amount == 0 {
			return err
		}
		return billing.ChargeAll(ctx, tx, payer, []billing.Charge{{MessageID: p.ID, Amount: amount}}, false, p.Now)
	})
	if e := apperror.As(err); e != nil && e.Code == "insufficient_balance" {
		e.Message = "The project's balance cannot pay for this number's first month; add credit (switchboard balance credit) and buy it again."
	}
	return row, err
}

// fail ends a purchase the provider refused: its money comes back. It returns answer.
func (s *Service) fail(ctx context.Context, row db.PhoneNumber, why string, answer error) error {
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		now := s.now()
		if _, err := billing.Refund(ctx, tx, row.Project, row.ID, now); err != nil {
			return err
		}
		return db.Planned(tx).FailPhoneNumber(ctx, db.FailPhoneNumberParams{ID: row.ID, Failure: &why, Now: now})
	})
	if err != nil {
		return errors.Join(answer, fmt.Errorf("refund purchase %s: %w", row.ID, err))
	}
	return answer
}

// finish makes the bought number's PhoneNumber and records the purchase as done. A PhoneNumber
// of the number there already (an operator's, a sender's claim) becomes the bought one.
func (s *Service) finish(ctx context.Context, row db.PhoneNumber, b Bought, name *string) (*v1alpha1.PhoneNumber, error) {
	caps := capabilityNames(b.SMS, b.Voice, b.MMS)
	pn := &v1alpha1.PhoneNumber{ObjectMeta: metav1.ObjectMeta{Namespace: row.Namespace, Name: row.Resource,
		Annotations: map[string]string{v1alpha1.PhoneNumberPurchaseAnnotation: row.ID}},
		Spec: v1alpha1.PhoneNumberSpec{Number: row.Number}}
	if row.Namespace != row.Project {
		pn.Spec.Project = row.Project
	}
	if row.Provider != "" {
		_, pn.Spec.Provider, _ = strings.Cut(row.Provider, "/")
		pn.Annotations[v1alpha1.PhoneNumberSIDAnnotation] = b.SID
		pn.Finalizers = []string{v1alpha1.PhoneNumberReleaseFinalizer}
	}
	for _, c := range caps {
		pn.Spec.Capabilities = append(pn.Spec.Capabilities, v1alpha1.PhoneCapability(c))
	}
	if name != nil {
		pn.Annotations[v1alpha1.PhoneNumberNameAnnotation] = *name
	}
	err := kubewrite.Write(ctx, s.Kube, pn)
	if apierrors.IsAlreadyExists(err) {
		err = s.adopt(ctx, pn)
	}
	if err != nil {
		return nil, fmt.Errorf("create phone number %s/%s: %w", pn.Namespace, pn.Name, err)
	}
	now := s.now()
	renews := s.nextMonth(now)
	if err := db.Planned(s.Pool).BoughtPhoneNumber(ctx, db.BoughtPhoneNumberParams{ID: row.ID, NumberSid: b.SID, Capabilities: caps,
		RenewsAt: renews, Now: now}); err != nil {
		return nil, fmt.Errorf("record purchase %s: %w", row.ID, err)
	}
	pn.Status.Purchase = &v1alpha1.PhoneNumberPurchase{ID: row.ID, MonthlyPrice: usd(row.MonthlyMicros),
		UpfrontPrice: usd(row.UpfrontMicros), BoughtAt: metav1.NewTime(now.Truncate(time.Second)),
		PaidUntil: metav1.NewTime(renews.Truncate(time.Second))}
	if err := s.writePurchase(ctx, pn); err != nil {
		return nil, err
	}
	return pn, nil
}

// adopt makes the PhoneNumber of want's name the bought one: the purchase's annotations,
// finalizer, provider and capabilities on the claim that was there.
func (s *Service) adopt(ctx context.Context, want *v1alpha1.PhoneNumber) error {
	var have v1alpha1.PhoneNumber
	if err := s.Kube.Get(ctx, client.ObjectKeyFromObject(want), &have); err != nil {
		return err
	}
	if have.Spec.Number != want.Spec.Number || (have.Spec.Provider != "" && have.Spec.Provider != want.Spec.Provider) {
		return fmt.Errorf("PhoneNumber %s/%s is of another number or account", have.Namespace, have.Name)
	}
	before := have.DeepCopy()
	if have.Annotations == nil {
		have.Annotations = map[string]string{}
	}
	for k, v := range want.Annotations {
		have.Annotations[k] = v
	}
	for _, f := range want.Finalizers {
		if !slices.Contains(have.Finalizers, f) {
			have.Finalizers = append(have.Finalizers, f)
		}
	}
	have.Spec.Capabilities = want.Spec.Capabilities
	if err := s.Kube.Patch(ctx, &have, client.MergeFrom(before), client.FieldOwner(kubewrite.FieldManager)); err != nil {
		return err
	}
	*want = have
	return nil
}

// writePurchase writes pn's status.purchase (the controller writes the rest of its status).
func (s *Service) writePurchase(ctx context.Context, pn *v1alpha1.PhoneNumber) error {
	purchase := pn.Status.Purchase
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cur v1alpha1.PhoneNumber
		if err := s.Kube.Get(ctx, client.ObjectKeyFromObject(pn), &cur); err != nil {
			return err
		}
		before := cur.DeepCopy()
		cur.Status.Purchase = purchase
		if err := s.Kube.Status().Patch(ctx, &cur, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}),
			client.FieldOwner(kubewrite.FieldManager)); err != nil {
			return err
		}
		*pn = cur
		return nil
	})
}

// usd is an amount of micro-dollars as a resource writes it.
func usd(micros int64) v1alpha1.USDAmount { return v1alpha1.USDAmount(billing.Micros(micros).String()) }

func capabilityNames(sms, voice, mms bool) []string {
	var out []string
	if mms {
		out = append(out, string(v1alpha1.CapabilityMMS))
	}
	if sms {
		out = append(out, string(v1alpha1.CapabilitySMS))
	}
	if voice {
		out = append(out, string(v1alpha1.CapabilityVoice))
	}
	return out
}

// owned lists the PhoneNumbers that claim a number for project: its namespace's, and the
// installation's that assign one to it.
func (s *Service) owned(ctx context.Context, project string) ([]v1alpha1.PhoneNumber, error) {
	var out []v1alpha1.PhoneNumber
	var list v1alpha1.PhoneNumberList
	if err := s.Reader.List(ctx, &list, client.InNamespace(project)); err != nil {
		return nil, err
	}
	for _, p := range list.Items {
		if p.DeletionTimestamp.IsZero() && phonenumber.ClaimFor(&p) == project {
			out = append(out, p)
		}
	}
	if s.InstallationNamespace != "" && s.InstallationNamespace != project {
		var shared v1alpha1.PhoneNumberList
		if err := s.Reader.List(ctx, &shared, client.InNamespace(s.InstallationNamespace)); err != nil {
			return nil, err
		}
		for _, p := range shared.Items {
			if p.DeletionTimestamp.IsZero() && p.Spec.Project == project {
				out = append(out, p)
			}
		}
	}
	// The newest first, as the other lists.
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return b.CreationTimestamp.Before(&a.CreationTimestamp)
		}
		return a.Name > b.Name
	})
	return out, nil
}

// List is the numbers the project owns or is buying (status filters: "" for all), newest first.
func (s *Service) List(ctx context.Context, project, status string) ([]Owned, error) {
	if status != "" && !slices.Contains(OwnedStatuses, status) {
		return nil, apperror.InvalidFields(apperror.FieldError{Path: "status", Message: "must be one of " + strings.Join(OwnedStatuses, ", ")})
	}
	items, err := s.owned(ctx, project)
	if err != nil {
		return nil, err
	}
	rows, err := db.Planned(s.Pool).PhoneNumbersOfProject(ctx, project)
	if err != nil {
		return nil, err
	}
	byResource := map[string]*db.PhoneNumber{}
	for i := range rows {
		byResource[rows[i].Namespace+"/"+rows[i].Resource] = &rows[i]
	}
	out := []Owned{}
	shown := map[string]bool{}
	for i := range items {
		shown[items[i].Namespace+"/"+items[i].Name] = true
		v := s.viewOf(&items[i], byResource[items[i].Namespace+"/"+items[i].Name])
		if status == "" || v.Status == status {
			out = append(out, v)
		}
	}
	for _, r := range rows {
		if r.State == "buying" && r.Bundle != nil && !shown[r.Namespace+"/"+r.Resource] && (status == "" || status == StatusPending) {
			out = append(out, s.awaiting(r))
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

// Get is one of the project's numbers by id (its PhoneNumber's name).
func (s *Service) Get(ctx context.Context, project, id string) (Owned, error) {
	pn, err := s.get(ctx, project, id)
	if e := apperror.As(err); e != nil && e.Kind == apperror.NotFound {
		rows, lerr := db.Planned(s.Pool).PhoneNumbersOfProject(ctx, project)
		if lerr != nil {
			return Owned{}, lerr
		}
		for _, r := range rows {
			if r.Resource == id && r.State == "buying" && r.Bundle != nil {
				return s.awaiting(r), nil
			}
		}
	}
	if err != nil {
		return Owned{}, err
	}
	return s.view(ctx, pn, nil)
}

func (s *Service) get(ctx context.Context, project, id string) (*v1alpha1.PhoneNumber, error) {
	items, err := s.owned(ctx, project)
	if err != nil {
		return nil, err
	}
	for i := range items {
		if items[i].Name == id {
			return &items[i], nil
		}
	}
	return nil, apperror.New(apperror.NotFound, "not_found", "Phone number not found.")
}

// Update renames a number, or gives it to a sender (or takes it away from its sender).
func (s *Service) Update(ctx context.Context, project, id string, c Change) (Owned, error) {
	if c.Name != nil && len([]rune(*c.Name)) > maxNameLength {
		return Owned{}, apperror.InvalidFields(apperror.FieldError{Path: "name", Message: fmt.Sprintf("must be at most %d characters", maxNameLength)})
	}
	pn, err := s.get(ctx, project, id)
	if err != nil {
		return Owned{}, err
	}
	if c.SenderID != nil {
		if err := s.assign(ctx, project, pn, *c.SenderID); err != nil {
			return Owned{}, err
		}
	}
	if c.Name != nil && *c.Name != pn.Annotations[v1alpha1.PhoneNumberNameAnnotation] {
		before := pn.DeepCopy()
		if pn.Annotations == nil {
			pn.Annotations = map[string]string{}
		}
		if *c.Name == "" {
			delete(pn.Annotations, v1alpha1.PhoneNumberNameAnnotation)
		} else {
			pn.Annotations[v1alpha1.PhoneNumberNameAnnotation] = *c.Name
		}
		if err := s.Kube.Patch(ctx, pn, client.MergeFrom(before), client.FieldOwner(kubewrite.FieldManager)); err != nil {
			return Owned{}, fmt.Errorf("rename phone number %s/%s: %w", pn.Namespace, pn.Name, err)
		}
	}
	return s.view(ctx, pn, nil)
}

// assign gives pn's number to sender ("": to none), taking it from the sender that has it.
func (s *Service) assign(ctx context.Context, project string, pn *v1alpha1.PhoneNumber, sender string) error {
	var list v1alpha1.SenderList
	if err := s.Reader.List(ctx, &list, client.InNamespace(project)); err != nil {
		return err
	}
	var holders []string
	for _, snd := range list.Items {
		if snd.DeletionTimestamp.IsZero() && snd.Spec.PhoneNumber == pn.Spec.Number {
			holders = append(holders, snd.Name)
		}
	}
	if sender != "" {
		if slices.Contains(holders, sender) {
			return nil
		}
		if len(holders) > 0 {
			return apperror.InvalidFields(apperror.FieldError{Path: "senderId", Message: fmt.Sprintf(
				"%s is assigned to sender %s: unassign it first (senderId: null)", pn.Spec.Number, holders[0])})
		}
		if !pn.Holds(project) {
			return apperror.InvalidFields(apperror.FieldError{Path: "senderId", Message: pn.Spec.Number + " is not active: a sender can have it once it is"})
		}
		return s.Senders.SetNumber(ctx, project, sender, pn.Spec.Number)
	}
	for _, h := range holders {
		if err := s.Senders.SetNumber(ctx, project, h, ""); err != nil {
			return err
		}
	}
	return nil
}

// Release gives a bought number back: its PhoneNumber goes (the controller releases the number
// from the account), its renewals stop. A number a sender has is kept (409), as is one an
// operator assigned and the project did not buy (400).
func (s *Service) Release(ctx context.Context, project, id string) error {
	pn, err := s.get(ctx, project, id)
	if err != nil {
		return err
	}
	if pn.Annotations[v1alpha1.PhoneNumberPurchaseAnnotation] == "" {
		return apperror.New(apperror.Invalid, "invalid_request", fmt.Sprintf(
			"%s was not bought through the API: an operator assigned it (or the project's own account holds it); it is released there.", pn.Spec.Number))
	}
	var list v1alpha1.SenderList
	if err := s.Reader.List(ctx, &list, client.InNamespace(project)); err != nil {
		return err
	}
	for _, snd := range list.Items {
		if snd.DeletionTimestamp.IsZero() && snd.Spec.PhoneNumber == pn.Spec.Number {
			return apperror.New(apperror.Conflict, "conflict", fmt.Sprintf(
				"%s is assigned to sender %s: unassign it first (PATCH /v1/phone-numbers/%s with senderId: null).", pn.Spec.Number, snd.Name, id))
		}
	}
	row, err := db.Planned(s.Pool).PhoneNumberOfResource(ctx, db.PhoneNumberOfResourceParams{Namespace: pn.Namespace, Resource: pn.Name})
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if err := s.Kube.Delete(ctx, pn, client.Preconditions{UID: &pn.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete phone number %s/%s: %w", pn.Namespace, pn.Name, err)
	}
	if err == nil {
		return db.Planned(s.Pool).ReleasePhoneNumber(ctx, db.ReleasePhoneNumberParams{ID: row.ID, Now: s.now()})
	}
	return nil
}

// awaiting is a purchase waiting for its bundle's review, as the API shows it: pending, no
// PhoneNumber yet.
func (s *Service) awaiting(row db.PhoneNumber) Owned {
	monthly := billing.Micros(row.MonthlyMicros)
	updated := row.UpdatedAt.UTC()
	v := Owned{ID: row.Resource, PhoneNumber: row.Number, Capabilities: row.Capabilities, CreatedAt: row.CreatedAt.UTC(),
		Status: StatusPending, Name: deref(row.DisplayName), UpdatedAt: &updated,
		Pricing: OwnedPricing{MonthlyCost: monthly.Cents(), MonthlyPrice: monthly.USD(), UpfrontCost: billing.Micros(row.UpfrontMicros).Cents()}}
	if v.Capabilities == nil {
		v.Capabilities = []string{}
	}
	return v
}

// view is pn as the API shows it, with its purchase (row, read when nil).
func (s *Service) view(ctx context.Context, pn *v1alpha1.PhoneNumber, row *db.PhoneNumber) (Owned, error) {
	if row == nil {
		r, err := db.Planned(s.Pool).PhoneNumberOfResource(ctx, db.PhoneNumberOfResourceParams{Namespace: pn.Namespace, Resource: pn.Name})
		switch {
		case err == nil:
			row = &r
		case !errors.Is(err, pgx.ErrNoRows):
			return Owned{}, err
		}
	}
	return s.viewOf(pn, row), nil
}

func (s *Service) viewOf(pn *v1alpha1.PhoneNumber, row *db.PhoneNumber) Owned {
	v := Owned{ID: pn.Name, PhoneNumber: pn.Spec.Number, Capabilities: []string{}, CreatedAt: pn.CreationTimestamp.UTC(),
		Name: pn.Annotations[v1alpha1.PhoneNumberNameAnnotation], Status: StatusPending}
	caps := pn.Status.Capabilities
	if len(caps) == 0 {
		caps = pn.Spec.Capabilities
	}
	for _, c := range caps {
		v.Capabilities = append(v.Capabilities, string(c))
	}
	if len(pn.Status.Senders) > 0 {
		v.SenderID = pn.Status.Senders[0]
	}
	ready := meta.FindStatusCondition(pn.Status.Conditions, v1alpha1.ConditionReady)
	switch {
	case pn.IsReady():
		v.Status = StatusActive
	case ready != nil && ready.Reason == v1alpha1.ReasonNumberSuspended:
		v.Status = StatusSuspended
	}
	if row != nil {
		if row.State == "suspended" {
			v.Status = StatusSuspended
		}
		monthly := billing.Micros(row.MonthlyMicros)
		v.Pricing = OwnedPricing{MonthlyCost: monthly.Cents(), MonthlyPrice: monthly.USD(), UpfrontCost: billing.Micros(row.UpfrontMicros).Cents()}
		if row.State != "buying" {
			renews := row.RenewsAt.UTC()
			v.NextRenewalDate = &renews
		}
		updated := row.UpdatedAt.UTC()
		v.UpdatedAt = &updated
	}
	return v
}

// activeWait bounds how long a purchase waits for its number to be the project's.
const activeWait = 10 * time.Second

// WaitActive waits until the number id (just bought) is active: its PhoneNumber holds it for
// the project, so a sender can have it. Past activeWait it is 503.
func (s *Service) WaitActive(ctx context.Context, project, id string) (Owned, error) {
	ctx, cancel := context.WithTimeout(ctx, activeWait)
	defer cancel()
	for {
		n, err := s.Get(ctx, project, id)
		if err == nil && n.Status == StatusActive {
			return n, nil
		}
		select {
		case <-ctx.Done():
			return Owned{}, apperror.New(apperror.Unavailable, "provider_unavailable",
				fmt.Sprintf("The number is bought (GET /v1/phone-numbers/%s) and not active yet; turn SMS on with POST /v2/channels once it is.", id))
		case <-time.After(50 * time.Millisecond):
		}
	}
}
