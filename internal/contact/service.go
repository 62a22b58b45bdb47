package contact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/addr"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/emailcheck"
	"github.com/switchboard-io/switchboard/internal/erasure"
	"github.com/switchboard-io/switchboard/internal/optional"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// CodeDuplicateIdentifier is the error code of an identifier another contact already holds on
// the channel. Its details.conflicts lists each as a Conflict. (v1 answers it as a plain
// invalid_request; the HTTP layer decides.)
const CodeDuplicateIdentifier = "duplicate_identifier"

// Conflict names an identifier of a request and the contact that already holds it.
type Conflict struct {
	Channel    string `json:"channel"`
	Identifier string `json:"identifier"`
	ContactID  string `json:"contactId"`
}

func duplicateIdentifier(conflicts []Conflict) *apperror.Error {
	msgs := make([]string, len(conflicts))
	for i, c := range conflicts {
		msgs[i] = fmt.Sprintf("%s %s", c.Channel, c.Identifier)
	}
	e := apperror.New(apperror.Invalid, CodeDuplicateIdentifier,
		"Another contact already has "+strings.Join(msgs, ", ")+"; merge the contacts or remove it there first.")
	e.Details = map[string]any{"conflicts": conflicts}
	return e
}

// Service keeps contacts and their channels.
type Service struct {
	pool *pgxpool.Pool
	now  func() time.Time
	// eraser erases a deleted contact's person from the project; nil only deletes the contact.
	eraser Eraser
}

// Eraser erases a person from a project, recorded in the transaction that deletes their contact
// (erasure.Queue).
type Eraser interface {
	Erase(ctx context.Context, tx pgx.Tx, req erasure.Request) error
}

// SetEraser makes deleting a contact erase its person.
func (s *Service) SetEraser(e Eraser) { s.eraser = e }

// NewService returns a Service.
func NewService(pool *pgxpool.Pool) *Service {
	return &Service{pool: pool, now: time.Now}
}

func (s *Service) timestamp() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// CreateInput is the body of POST /v1/contacts and /v2/contacts.
type CreateInput struct {
	Channels       *[]ChannelInput   `json:"channels"`
	DisplayName    *string           `json:"displayName"`
	DefaultChannel *string           `json:"defaultChannel"`
	Metadata       map[string]string `json:"metadata"`
	Tags           []string          `json:"tags"`
}

// checkCreate validates a create request and lists every invalid field. It returns the channels
// with their primary flags decided: per type the one marked primary, else the first not marked
// otherwise.
func checkCreate(in CreateInput) ([]newChannel, []string, []apperror.FieldError) {
	var errs []apperror.FieldError
	var channels []newChannel
	switch {
	case in.Channels == nil:
		errs = append(errs, apperror.FieldError{Path: "channels", Message: "is required"})
	case len(*in.Channels) == 0 || len(*in.Channels) > maxChannels:
		errs = append(errs, apperror.FieldError{Path: "channels", Message: fmt.Sprintf("must hold 1 to %d channels", maxChannels)})
	default:
		for i, chIn := range *in.Channels {
			prefix := fmt.Sprintf("channels[%d].", i)
			ch, chErrs := checkChannelInput(prefix, chIn)
			errs = append(errs, chErrs...)
			for j, prev := range channels {
				if ch.channel != "" && ch.identifier != "" && prev.channel == ch.channel && prev.identifier == ch.identifier {
					errs = append(errs, apperror.FieldError{Path: prefix + "identifier", Message: fmt.Sprintf("repeats channels[%d]", j)})
				}
				if isTrue(ch.isPrimary) && isTrue(prev.isPrimary) && prev.channel == ch.channel && ch.channel != "" {
					errs = append(errs, apperror.FieldError{Path: prefix + "isPrimary", Message: fmt.Sprintf("channels[%d] is already the primary %s channel", j, ch.channel)})
				}
			}
			channels = append(channels, ch)
		}
	}
	if in.DisplayName != nil {
		if e := checkDisplayName("displayName", *in.DisplayName); e != nil {
			errs = append(errs, *e)
		}
	}
	if in.DefaultChannel != nil {
		if e := checkChannel("defaultChannel", in.DefaultChannel); e != nil {
			errs = append(errs, *e)
		} else if !hasType(channels, *in.DefaultChannel) && in.Channels != nil {
			errs = append(errs, apperror.FieldError{Path: "defaultChannel", Message: "must be the type of one of the contact's channels"})
		}
	}
	errs = append(errs, checkMetadata("metadata", in.Metadata)...)
	tags, tagErrs := checkTags("tags", in.Tags)
	errs = append(errs, tagErrs...)
	decidePrimaries(channels)
	return channels, tags, errs
}

// decidePrimaries marks, per channel type, the channel asked to be primary, or else the first
// one not asked to stay secondary.
func decidePrimaries(channels []newChannel) {
	done := map[string]bool{}
	for _, ch := range channels {
		if isTrue(ch.isPrimary) {
			done[ch.channel] = true
		}
	}
	for i := range channels {
		ch := &channels[i]
		switch {
		case ch.isPrimary != nil:
		case !done[ch.channel]:
			ch.isPrimary, done[ch.channel] = ptr(true), true
		default:
			ch.isPrimary = ptr(false)
		}
	}
}

func hasType(channels []newChannel, t string) bool {
	for _, ch := range channels {
		if ch.channel == t {
			return true
		}
	}
	return false
}

// Create stores a contact with its channels in one transaction: an invalid request, or an
// identifier another contact holds (duplicate_identifier), stores nothing.
func (s *Service) Create(ctx context.Context, key apikey.Key, in CreateInput) (Contact, error) {
	channels, tags, errs := checkCreate(in)
	if len(errs) > 0 {
		return Contact{}, apperror.InvalidFields(errs...)
	}
	id, err := randid.Prefixed("ct_", 24)
	if err != nil {
		return Contact{}, err
	}
	now := s.timestamp()
	metadata, _ := json.Marshal(nonNil(in.Metadata))
	var out Contact
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		if err := q.InsertContact(ctx, db.InsertContactParams{ID: id, Project: key.Project, TestMode: key.TestMode(),
			DisplayName: in.DisplayName, DefaultChannel: in.DefaultChannel, Metadata: metadata, Tags: tags, CreatedAt: now}); err != nil {
			return fmt.Errorf("insert contact: %w", err)
		}
		var conflicts []Conflict
		for i, ch := range channels {
			// Channels of one request get distinct times, so they list in the order given.
			row, conflict, err := insertChannel(ctx, q, key, id, ch, now.Add(time.Duration(i)*time.Microsecond))
			if err != nil {
				return err
			}
			if conflict != nil {
				conflicts = append(conflicts, *conflict)
				continue
			}
			out.Channels = append(out.Channels, Channel{ContactChannel: row})
		}
		if len(conflicts) > 0 {
			return duplicateIdentifier(conflicts)
		}
		c, err := q.GetContact(ctx, db.GetContactParams{ID: id, Project: key.Project, TestMode: key.TestMode()})
		if err != nil {
			return fmt.Errorf("read contact %s: %w", id, err)
		}
		out.Contact = c
		return s.withSuppressions(ctx, q, key, []Contact{out})
	})
	if err != nil {
		return Contact{}, err
	}
	return out, nil
}

// insertChannel adds ch to contact, or returns who holds its identifier already. The unique
// constraint decides; a holder that let go of the identifier between the two statements is
// asked about again.
func insertChannel(ctx context.Context, q *db.Queries, key apikey.Key, contactID string, ch newChannel, at time.Time) (db.ContactChannel, *Conflict, error) {
	id, err := randid.Prefixed("cch_", 24)
	if err != nil {
		return db.ContactChannel{}, nil, err
	}
	for attempt := 0; attempt < 3; attempt++ {
		row, err := q.InsertContactChannel(ctx, db.InsertContactChannelParams{ID: id, ContactID: contactID, Project: key.Project,
			TestMode: key.TestMode(), Channel: ch.channel, Identifier: ch.identifier, IsPrimary: isTrue(ch.isPrimary),
			CountryCode: ch.countryCode, Label: ch.label, CreatedAt: at})
		if err == nil {
			return row, nil, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return db.ContactChannel{}, nil, fmt.Errorf("insert contact channel: %w", err)
		}
		holder, err := q.ChannelHolder(ctx, db.ChannelHolderParams{Project: key.Project, TestMode: key.TestMode(),
			Channel: ch.channel, Identifier: ch.identifier})
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return db.ContactChannel{}, nil, fmt.Errorf("read holder of a contact identifier: %w", err)
		}
		return db.ContactChannel{}, &Conflict{Channel: ch.channel, Identifier: ch.identifier, ContactID: holder}, nil
	}
	return db.ContactChannel{}, nil, errors.New("insert contact channel: the identifier's holder changed on every attempt")
}

// Get returns the key's contact id; another project's, or another mode's, is not found.
func (s *Service) Get(ctx context.Context, key apikey.Key, id string) (Contact, error) {
	q := db.Planned(s.pool)
	c, err := q.GetContact(ctx, db.GetContactParams{ID: id, Project: key.Project, TestMode: key.TestMode()})
	if errors.Is(err, pgx.ErrNoRows) {
		return Contact{}, notFound(id)
	}
	if err != nil {
		return Contact{}, fmt.Errorf("read contact %s: %w", id, err)
	}
	return s.shown(ctx, q, key, c)
}

// ByPhone returns the key's contact that has phone on a phone channel (sms first, then
// whatsapp, then voice when different contacts hold it on each).
func (s *Service) ByPhone(ctx context.Context, key apikey.Key, phone string) (Contact, error) {
	if !addr.IsE164(phone) {
		return Contact{}, apperror.InvalidFields(apperror.FieldError{Path: "phoneNumber", Message: "must be an E.164 phone number such as +14155551234"})
	}
	q := db.Planned(s.pool)
	c, err := q.ContactByPhone(ctx, db.ContactByPhoneParams{Project: key.Project, TestMode: key.TestMode(), Phone: phone})
	if errors.Is(err, pgx.ErrNoRows) {
		return Contact{}, apperror.NotFoundf("No contact has the phone number %s.", phone)
	}
	if err != nil {
		return Contact{}, fmt.Errorf("find contact by phone: %w", err)
	}
	return s.shown(ctx, q, key, c)
}

// ListFilter narrows a contact list.
type ListFilter struct {
	// PhoneNumber matches a phone channel's identifier exactly (E.164).
	PhoneNumber *string
	// Search is a case-insensitive substring of the display name, the profile name or an identifier.
	Search *string
	// Tags must all be carried; a tag no contact carries is refused.
	Tags []string
	// BeforeTime and BeforeID continue after the last contact of the previous page.
	BeforeTime *time.Time
	BeforeID   *string
	Limit      int
}

// List returns the key's contacts, newest first, with their channels.
func (s *Service) List(ctx context.Context, key apikey.Key, f ListFilter) ([]Contact, error) {
	var errs []apperror.FieldError
	if f.PhoneNumber != nil && !addr.IsE164(*f.PhoneNumber) {
		errs = append(errs, apperror.FieldError{Path: "phoneNumber", Message: "must be an E.164 phone number such as +14155551234 (send + as %2B)"})
	}
	var pattern *string
	if f.Search != nil {
		if len([]rune(*f.Search)) > maxSearch {
			errs = append(errs, apperror.FieldError{Path: "search", Message: fmt.Sprintf("must be up to %d characters", maxSearch)})
		}
		p := likePattern(*f.Search)
		pattern = &p
	}
	if len(errs) > 0 {
		return nil, apperror.InvalidFields(errs...)
	}
	q := db.Planned(s.pool)
	var tags []string
	if len(f.Tags) > 0 {
		unknown, err := q.UnknownTags(ctx, db.UnknownTagsParams{Tags: f.Tags, Project: key.Project, TestMode: key.TestMode()})
		if err != nil {
			return nil, fmt.Errorf("check tags: %w", err)
		}
		for _, t := range unknown {
			errs = append(errs, apperror.FieldError{Path: "tag", Message: fmt.Sprintf("no contact carries the tag %q", t)})
		}
		if len(errs) > 0 {
			return nil, apperror.InvalidFields(errs...)
		}
		tags = f.Tags
	}
	rows, err := q.ListContacts(ctx, db.ListContactsParams{Project: key.Project, TestMode: key.TestMode(), Phone: f.PhoneNumber,
		Pattern: pattern, Tags: tags, BeforeTime: f.BeforeTime, BeforeID: f.BeforeID, PageSize: int32(f.Limit)})
	if err != nil {
		return nil, fmt.Errorf("list contacts: %w", err)
	}
	out, err := withAllChannels(ctx, q, rows)
	if err != nil {
		return nil, err
	}
	return out, s.withSuppressions(ctx, q, key, out)
}

// UpdateInput is the body of PATCH /v1/contacts/{id} and /v2/contacts/{id}: fields left out stay,
// null clears (metadata to {}, tags to []).
type UpdateInput struct {
	DisplayName    optional.Value[string]            `json:"displayName"`
	DefaultChannel optional.Value[string]            `json:"defaultChannel"`
	Metadata       optional.Value[map[string]string] `json:"metadata"`
	Tags           optional.Value[[]string]          `json:"tags"`
}

// Update changes a contact. defaultChannel must be the type of one of its channels.
func (s *Service) Update(ctx context.Context, key apikey.Key, id string, in UpdateInput) (Contact, error) {
	var errs []apperror.FieldError
	if in.DisplayName.Set && !in.DisplayName.Null {
		if e := checkDisplayName("displayName", in.DisplayName.Value); e != nil {
			errs = append(errs, *e)
		}
	}
	if in.DefaultChannel.Set && !in.DefaultChannel.Null {
		if e := checkChannel("defaultChannel", &in.DefaultChannel.Value); e != nil {
			errs = append(errs, *e)
		}
	}
	if in.Metadata.Set {
		errs = append(errs, checkMetadata("metadata", in.Metadata.Value)...)
	}
	tags, tagErrs := checkTags("tags", in.Tags.Value)
	errs = append(errs, tagErrs...)
	if len(errs) > 0 {
		return Contact{}, apperror.InvalidFields(errs...)
	}
	var out Contact
	err := s.inContact(ctx, key, id, func(q *db.Queries, c Contact) error {
		p := db.UpdateContactParams{ID: c.ID, DisplayName: c.DisplayName, ProfileName: c.ProfileName, DefaultChannel: c.DefaultChannel,
			Metadata: c.Metadata, Tags: c.Tags, Verified: c.Verified, UpdatedAt: s.timestamp()}
		if in.DisplayName.Set {
			p.DisplayName = optionalString(in.DisplayName)
		}
		if in.DefaultChannel.Set {
			p.DefaultChannel = optionalString(in.DefaultChannel)
			if p.DefaultChannel != nil && !contains(c.AvailableChannels(), *p.DefaultChannel) {
				return apperror.InvalidFields(apperror.FieldError{Path: "defaultChannel",
					Message: fmt.Sprintf("the contact has no %s channel; its channels: %s", *p.DefaultChannel, strings.Join(c.AvailableChannels(), ", "))})
			}
		}
		if in.Metadata.Set {
			p.Metadata, _ = json.Marshal(nonNil(in.Metadata.Value))
		}
		if in.Tags.Set {
			p.Tags = tags
		}
		row, err := q.UpdateContact(ctx, p)
		if err != nil {
			return fmt.Errorf("update contact %s: %w", id, err)
		}
		out = Contact{Contact: row, Channels: c.Channels}
		return s.withSuppressions(ctx, q, key, []Contact{out})
	})
	return out, err
}

// Delete removes a contact and erases its person from the project's data of the key's mode:
// the erasure (internal/erasure) is recorded and queued with the deletion, and runs in the
// background; the answer does not wait for it. Deleting it again is not found.
func (s *Service) Delete(ctx context.Context, key apikey.Key, id string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if s.eraser != nil {
			mode := key.TestMode()
			err := s.eraser.Erase(ctx, tx, erasure.Request{Project: key.Project, TestMode: &mode, ContactID: id, RequestedBy: "api-key:" + key.ID})
			if err != nil && !errors.Is(err, erasure.ErrNothing) {
				return fmt.Errorf("erase contact %s: %w", id, err)
			}
		}
		n, err := db.Planned(tx).DeleteContact(ctx, db.DeleteContactParams{ID: id, Project: key.Project, TestMode: key.TestMode()})
		if err != nil {
			return fmt.Errorf("delete contact %s: %w", id, err)
		}
		if n == 0 {
			return notFound(id)
		}
		return nil
	})
}

// MergeInput is the body of POST /v1/contacts/{id}/merge.
type MergeInput struct {
	SourceContactID *string `json:"sourceContactId"`
}

// Merge folds the source contact into the target in one transaction: the source's channels and
// conversations move to the target, its fields fill the target's empty ones (metadata keys the
// target lacks, tags it lacks), and the source is deleted. Where both have a primary channel of
// a type, the target's stays primary. A source channel that is an address the target already
// has joins the target's channel, its metrics added; every other channel moves whole.
func (s *Service) Merge(ctx context.Context, key apikey.Key, targetID string, in MergeInput) (Contact, error) {
	switch {
	case in.SourceContactID == nil || *in.SourceContactID == "":
		return Contact{}, apperror.InvalidFields(apperror.FieldError{Path: "sourceContactId", Message: "is required"})
	case *in.SourceContactID == targetID:
		return Contact{}, apperror.InvalidFields(apperror.FieldError{Path: "sourceContactId", Message: "must be another contact than the one merged into"})
	}
	sourceID := *in.SourceContactID
	var out Contact
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		// Lock both in one order, so two merges of the same pair cannot deadlock.
		locked := map[string]db.Contact{}
		for _, id := range sorted(targetID, sourceID) {
			c, err := q.LockContact(ctx, db.LockContactParams{ID: id, Project: key.Project, TestMode: key.TestMode()})
			if errors.Is(err, pgx.ErrNoRows) {
				return notFound(id)
			}
			if err != nil {
				return fmt.Errorf("lock contact %s: %w", id, err)
			}
			locked[id] = c
		}
		target, source := locked[targetID], locked[sourceID]
		now := s.timestamp()
		if err := q.FoldMergedChannels(ctx, db.FoldMergedChannelsParams{Source: sourceID, Target: targetID, UpdatedAt: now}); err != nil {
			return fmt.Errorf("fold channels of %s: %w", sourceID, err)
		}
		if err := q.DemoteMergedPrimaries(ctx, db.DemoteMergedPrimariesParams{Source: sourceID, Target: targetID, UpdatedAt: now}); err != nil {
			return fmt.Errorf("merge primaries of %s: %w", sourceID, err)
		}
		if err := q.MoveContactChannels(ctx, db.MoveContactChannelsParams{Source: sourceID, Target: targetID, UpdatedAt: now}); err != nil {
			return fmt.Errorf("move channels of %s: %w", sourceID, err)
		}
		if err := q.MoveConversations(ctx, db.MoveConversationsParams{Source: sourceID, Target: targetID, Project: key.Project,
			TestMode: key.TestMode(), UpdatedAt: now}); err != nil {
			return fmt.Errorf("move conversations of %s: %w", sourceID, err)
		}
		merged := absorb(target, source)
		merged.UpdatedAt = now
		row, err := q.UpdateContact(ctx, merged)
		if err != nil {
			return fmt.Errorf("update contact %s: %w", targetID, err)
		}
		if _, err := q.DeleteContact(ctx, db.DeleteContactParams{ID: sourceID, Project: key.Project, TestMode: key.TestMode()}); err != nil {
			return fmt.Errorf("delete contact %s: %w", sourceID, err)
		}
		out, err = s.shown(ctx, q, key, row)
		return err
	})
	return out, err
}

// absorb is the target's fields after a merge: the source fills what the target lacks.
func absorb(target, source db.Contact) db.UpdateContactParams {
	p := db.UpdateContactParams{ID: target.ID, DisplayName: target.DisplayName, ProfileName: target.ProfileName,
		DefaultChannel: target.DefaultChannel, Tags: target.Tags, Verified: target.Verified || source.Verified}
	if p.DisplayName == nil {
		p.DisplayName = source.DisplayName
	}
	if p.ProfileName == nil {
		p.ProfileName = source.ProfileName
	}
	if p.DefaultChannel == nil {
		p.DefaultChannel = source.DefaultChannel
	}
	metadata := Metadata(source.Metadata)
	for k, v := range Metadata(target.Metadata) {
		metadata[k] = v
	}
	p.Metadata, _ = json.Marshal(metadata)
	p.Tags = append([]string{}, target.Tags...)
	for _, t := range source.Tags {
		if !contains(p.Tags, t) {
			p.Tags = append(p.Tags, t)
		}
	}
	return p
}

// AddChannel adds a channel to a contact. Without isPrimary it is primary when the contact has
// no primary channel of its type; with isPrimary true it takes over from the one that was.
func (s *Service) AddChannel(ctx context.Context, key apikey.Key, contactID string, in ChannelInput) (Channel, error) {
	ch, errs := checkChannelInput("", in)
	if len(errs) > 0 {
		return Channel{}, apperror.InvalidFields(errs...)
	}
	var out Channel
	err := s.inContact(ctx, key, contactID, func(q *db.Queries, c Contact) error {
		now := s.timestamp()
		if ch.isPrimary == nil {
			ch.isPrimary = ptr(c.primary(ch.channel) == nil)
		}
		row, conflict, err := insertChannel(ctx, q, key, contactID, ch, now)
		if err != nil {
			return err
		}
		if conflict != nil && conflict.ContactID == contactID {
			return apperror.InvalidFields(apperror.FieldError{Path: "identifier", Message: fmt.Sprintf("the contact already has %s on %s", ch.identifier, ch.channel)})
		}
		if conflict != nil {
			return duplicateIdentifier([]Conflict{*conflict})
		}
		if row.IsPrimary {
			if err := q.SetPrimaryChannel(ctx, db.SetPrimaryChannelParams{ID: row.ID, ContactID: contactID, Channel: row.Channel, UpdatedAt: now}); err != nil {
				return fmt.Errorf("set primary channel: %w", err)
			}
		}
		out = Channel{ContactChannel: row}
		if err := s.markSuppressed(ctx, q, key, []*Channel{&out}); err != nil {
			return err
		}
		return touch(ctx, q, contactID, now)
	})
	return out, err
}

// ChannelUpdate is the body of PATCH /v1/contacts/{id}/channels/{channelId}: fields left out
// stay; a null label clears it, a null metadata empties it.
type ChannelUpdate struct {
	Label    optional.Value[string]            `json:"label"`
	Metadata optional.Value[map[string]string] `json:"metadata"`
	Verified *bool                             `json:"verified"`
}

// UpdateChannel changes a channel's label, metadata or verified flag.
func (s *Service) UpdateChannel(ctx context.Context, key apikey.Key, contactID, channelID string, in ChannelUpdate) (Channel, error) {
	var errs []apperror.FieldError
	if in.Label.Set && !in.Label.Null {
		if e := checkLabel("label", in.Label.Value); e != nil {
			errs = append(errs, *e)
		}
	}
	if in.Metadata.Set {
		errs = append(errs, checkMetadata("metadata", in.Metadata.Value)...)
	}
	if len(errs) > 0 {
		return Channel{}, apperror.InvalidFields(errs...)
	}
	var out Channel
	err := s.inContact(ctx, key, contactID, func(q *db.Queries, c Contact) error {
		ch := c.channel(channelID)
		if ch == nil {
			return channelNotFound(channelID)
		}
		now := s.timestamp()
		p := db.UpdateContactChannelParams{ID: ch.ID, ContactID: contactID, Label: ch.Label, Metadata: ch.Metadata, Verified: ch.Verified, UpdatedAt: now}
		if in.Label.Set {
			p.Label = optionalString(in.Label)
		}
		if in.Metadata.Set {
			p.Metadata, _ = json.Marshal(nonNil(in.Metadata.Value))
		}
		if in.Verified != nil {
			p.Verified = *in.Verified
		}
		row, err := q.UpdateContactChannel(ctx, p)
		if err != nil {
			return fmt.Errorf("update contact channel %s: %w", channelID, err)
		}
		out = Channel{ContactChannel: row}
		if err := s.markSuppressed(ctx, q, key, []*Channel{&out}); err != nil {
			return err
		}
		return touch(ctx, q, contactID, now)
	})
	return out, err
}

// RemoveChannel removes a channel from a contact. A removed primary hands over to the contact's
// oldest channel of the type; the last channel of the contact's default type clears the default.
func (s *Service) RemoveChannel(ctx context.Context, key apikey.Key, contactID, channelID string) error {
	return s.inContact(ctx, key, contactID, func(q *db.Queries, c Contact) error {
		ch, err := q.DeleteContactChannel(ctx, db.DeleteContactChannelParams{ID: channelID, ContactID: contactID})
		if errors.Is(err, pgx.ErrNoRows) {
			return channelNotFound(channelID)
		}
		if err != nil {
			return fmt.Errorf("delete contact channel %s: %w", channelID, err)
		}
		now := s.timestamp()
		if ch.IsPrimary {
			if err := q.PromoteOldestChannel(ctx, db.PromoteOldestChannelParams{ContactID: contactID, Channel: ch.Channel, UpdatedAt: now}); err != nil {
				return fmt.Errorf("promote a %s channel: %w", ch.Channel, err)
			}
		}
		lastOfType := true
		for _, other := range c.Channels {
			if other.ID != ch.ID && other.Channel == ch.Channel {
				lastOfType = false
			}
		}
		if lastOfType && c.DefaultChannel != nil && *c.DefaultChannel == ch.Channel {
			_, err := q.UpdateContact(ctx, db.UpdateContactParams{ID: c.ID, DisplayName: c.DisplayName, ProfileName: c.ProfileName,
				Metadata: c.Metadata, Tags: c.Tags, Verified: c.Verified, UpdatedAt: now})
			if err != nil {
				return fmt.Errorf("clear default channel of %s: %w", contactID, err)
			}
			return nil
		}
		return touch(ctx, q, contactID, now)
	})
}

// SetPrimary makes a channel the contact's one primary channel of its type.
func (s *Service) SetPrimary(ctx context.Context, key apikey.Key, contactID, channelID string) (Channel, error) {
	var out Channel
	err := s.inContact(ctx, key, contactID, func(q *db.Queries, c Contact) error {
		ch := c.channel(channelID)
		if ch == nil {
			return channelNotFound(channelID)
		}
		now := s.timestamp()
		if err := q.SetPrimaryChannel(ctx, db.SetPrimaryChannelParams{ID: ch.ID, ContactID: contactID, Channel: ch.Channel, UpdatedAt: now}); err != nil {
			return fmt.Errorf("set primary channel %s: %w", channelID, err)
		}
		row, err := q.GetContactChannel(ctx, db.GetContactChannelParams{ID: ch.ID, ContactID: contactID})
		if err != nil {
			return fmt.Errorf("read contact channel %s: %w", channelID, err)
		}
		out = Channel{ContactChannel: row}
		if err := s.markSuppressed(ctx, q, key, []*Channel{&out}); err != nil {
			return err
		}
		return touch(ctx, q, contactID, now)
	})
	return out, err
}

// inContact runs fn in a transaction holding the key's contact id, with its channels; another
// project's or mode's contact is not found. Changes to one contact's channels are serial.
func (s *Service) inContact(ctx context.Context, key apikey.Key, id string, fn func(*db.Queries, Contact) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		row, err := q.LockContact(ctx, db.LockContactParams{ID: id, Project: key.Project, TestMode: key.TestMode()})
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound(id)
		}
		if err != nil {
			return fmt.Errorf("lock contact %s: %w", id, err)
		}
		c, err := withChannels(ctx, q, row)
		if err != nil {
			return err
		}
		return fn(q, c)
	})
}

func (c Contact) channel(id string) *db.ContactChannel {
	for i := range c.Channels {
		if c.Channels[i].ID == id {
			return &c.Channels[i].ContactChannel
		}
	}
	return nil
}

func withChannels(ctx context.Context, q *db.Queries, c db.Contact) (Contact, error) {
	all, err := withAllChannels(ctx, q, []db.Contact{c})
	if err != nil {
		return Contact{}, err
	}
	return all[0], nil
}

// withAllChannels reads the channels of contacts in one query.
func withAllChannels(ctx context.Context, q *db.Queries, contacts []db.Contact) ([]Contact, error) {
	out := make([]Contact, len(contacts))
	if len(contacts) == 0 {
		return out, nil
	}
	ids := make([]string, len(contacts))
	at := map[string]int{}
	for i, c := range contacts {
		ids[i], at[c.ID] = c.ID, i
		out[i] = Contact{Contact: c, Channels: []Channel{}}
	}
	rows, err := q.ListContactChannels(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("read contact channels: %w", err)
	}
	for _, ch := range rows {
		i := at[ch.ContactID]
		out[i].Channels = append(out[i].Channels, Channel{ContactChannel: ch})
	}
	return out, nil
}

// shown is the contact c as an answer shows it: with its channels, and the suppression list's
// entries for its email addresses.
func (s *Service) shown(ctx context.Context, q *db.Queries, key apikey.Key, c db.Contact) (Contact, error) {
	out, err := withChannels(ctx, q, c)
	if err != nil {
		return Contact{}, err
	}
	return out, s.withSuppressions(ctx, q, key, []Contact{out})
}

// withSuppressions marks the email channels of contacts with their entries on the project's
// suppression list (markSuppressed), in one read for all of them.
func (s *Service) withSuppressions(ctx context.Context, q *db.Queries, key apikey.Key, contacts []Contact) error {
	var chans []*Channel
	for i := range contacts {
		for j := range contacts[i].Channels {
			chans = append(chans, &contacts[i].Channels[j])
		}
	}
	return s.markSuppressed(ctx, q, key, chans)
}

// markSuppressed sets the Suppression of each email channel of chans: the entry in force on the
// project's suppression list in the key's mode (the contacts' own) for its address. One read,
// and none when no channel is an email.
func (s *Service) markSuppressed(ctx context.Context, q *db.Queries, key apikey.Key, chans []*Channel) error {
	var addresses []string
	for _, ch := range chans {
		if ch.Channel == "email" {
			addresses = append(addresses, ch.Identifier)
		}
	}
	if len(addresses) == 0 {
		return nil
	}
	entries, err := emailcheck.Among(ctx, q, key.Project, key.TestMode(), addresses, s.now())
	if err != nil {
		return err
	}
	for _, ch := range chans {
		if ch.Channel == "email" {
			ch.Suppression = entries[emailcheck.Key(ch.Identifier)]
		}
	}
	return nil
}

func touch(ctx context.Context, q *db.Queries, id string, at time.Time) error {
	if err := q.TouchContact(ctx, db.TouchContactParams{ID: id, UpdatedAt: at}); err != nil {
		return fmt.Errorf("touch contact %s: %w", id, err)
	}
	return nil
}

func notFound(id string) *apperror.Error { return apperror.NotFoundf("No contact %s.", id) }

func channelNotFound(id string) *apperror.Error {
	return apperror.NotFoundf("The contact has no channel %s.", id)
}

func optionalString(v optional.Value[string]) *string {
	if v.Null {
		return nil
	}
	return &v.Value
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func sorted(a, b string) []string {
	if a < b {
		return []string{a, b}
	}
	return []string{b, a}
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func isTrue(b *bool) bool { return b != nil && *b }

func ptr[T any](v T) *T { return &v }
