package message

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/quota"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// Outbound is a message ready to be accepted: valid, with its sender and channel chosen. A send
// makes one; a broadcast makes one per recipient and accepts them in batches.
type Outbound struct {
	Project  string
	TestMode bool
	// Sender is the Sender's name; From its address on Channel.
	Sender      string
	Channel     string
	MessageType string
	To, From    string
	Text        string
	Subject     *string
	Content     *transport.Content
	Metadata    map[string]string
	Options     Options
	// IdempotencyKey, when set, makes a second send with the same key return the first message.
	IdempotencyKey *string
	// BroadcastContactID is the broadcast recipient the message is for: its status follows the
	// message's (SetBroadcastFollower). A broadcast is reviewed as a whole, so its messages are
	// not reviewed again one by one, and their dispatch yields to single sends.
	BroadcastContactID string
	// UnsubscribeURL is the broadcast's own one-click unsubscribe link for this recipient, named
	// by the email's List-Unsubscribe instead of Switchboard's; "" for Switchboard's.
	UnsubscribeURL string
	attachments    []attachment
	// sender is the Sender resource, for the accept policies; strict, the send's rules.
	sender *v1alpha1.Sender
	strict bool
}

// ConversationID is the thread the message belongs to.
func (o *Outbound) ConversationID() string {
	return conversationID(o.Project, o.TestMode, o.Sender, o.To)
}

// Accept stores a batch of messages inside tx, the caller's transaction: for each, its
// idempotency key, its message.queued event, its dispatch job, the message itself in its
// conversation and its attachments. Everything commits or nothing does, so an accepted message
// is never lost. A key already used by another message returns *ErrDuplicate naming it; the
// caller must roll back. Outbound threads raise no conversation.new: a campaign does not
// announce one conversation per recipient.
//
// Lock order: the idempotency key first (a retry racing the original waits there, and then does
// nothing else), then the message with its conversation last, so that the conversation's row is
// locked only until the commit.
func (s *Service) Accept(ctx context.Context, tx pgx.Tx, batch []Outbound) ([]db.Message, error) {
	return s.accept(ctx, tx, batch, false)
}

// accept is Accept, and with commit it also commits tx: when the batch pays nothing, its
// limits' takes go in the commit's round trip (quota.TakeAllAndCommit), so a project's counters
// are not held while answers travel between Postgres and this process. An error wrapping
// *quota.ErrCommitUnknown may come after the commit; after any other, tx did not commit and the
// caller rolls back.
func (s *Service) accept(ctx context.Context, tx pgx.Tx, batch []Outbound, commit bool) ([]db.Message, error) {
	if len(batch) == 0 { // a broadcast's chunk whose every recipient was refused
		return nil, nil
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	msgs := make([]db.Message, len(batch))
	jobs := make([]river.InsertManyParams, 0, len(batch))
	// Test-mode messages go to the sandbox, which needs no retry, pace or record of each call:
	// the batch's are dispatched by one job (a broadcast chunk's, or a group of sends).
	var sandboxed []string
	bulk := false // a broadcast's chunk: its job waits behind single sends
	for i := range batch {
		if err := s.listHeaders(&batch[i]); err != nil {
			return nil, err
		}
		m, err := stored(&batch[i], now)
		if err != nil {
			return nil, err
		}
		if key := batch[i].IdempotencyKey; key != nil {
			owner, err := s.claim(ctx, tx, m, *key, s.retention.IdempotencyKeysSince(now))
			if err != nil {
				return nil, err
			}
			if owner != m.ID {
				return nil, &ErrDuplicate{Original: db.Message{ID: owner}}
			}
		}
		msgs[i] = m
		if batch[i].TestMode {
			sandboxed = append(sandboxed, m.ID)
			bulk = bulk || batch[i].BroadcastContactID != ""
			continue
		}
		jobs = append(jobs, river.InsertManyParams{Args: DispatchArgs{MessageID: m.ID}, InsertOpts: dispatchOpts(&batch[i])})
	}
	switch {
	case len(sandboxed) == 1 && !bulk:
		jobs = append(jobs, river.InsertManyParams{Args: DispatchArgs{MessageID: sandboxed[0]}})
	case len(sandboxed) > 0:
		var opts *river.InsertOpts
		if bulk {
			opts = &river.InsertOpts{Priority: bulkPriority}
		}
		jobs = append(jobs, river.InsertManyParams{Args: DispatchManyArgs{MessageIDs: sandboxed}, InsertOpts: opts})
	}
	// The events of the whole batch, one statement a project.
	byProject := map[string][]delivery.Event{}
	var projects []string
	for _, m := range msgs {
		if _, seen := byProject[m.Project]; !seen {
			projects = append(projects, m.Project)
		}
		byProject[m.Project] = append(byProject[m.Project], events(m)...)
	}
	for _, p := range projects {
		if _, err := s.deliveries.EnqueueAll(ctx, tx, byProject[p]...); err != nil {
			return nil, err
		}
	}
	if _, err := s.queue.InsertManyTx(ctx, tx, jobs); err != nil {
		return nil, fmt.Errorf("enqueue dispatch: %w", err)
	}
	// Priced before they are stored, so that their costs go in with them; paid for last.
	bills, err := s.price(ctx, msgs)
	if err != nil {
		return nil, err
	}
	threads := make([]thread, len(msgs))
	for i, m := range msgs {
		threads[i] = thread{msg: m}
	}
	if _, err := recordAll(ctx, tx, threads); err != nil {
		return nil, err
	}
	for i, m := range msgs {
		if err := storeAttachments(ctx, tx, m.ID, batch[i].attachments, now); err != nil {
			return nil, err
		}
	}
	// The sending limits last: their counters are the rows every send of a project waits on,
	// held only until the commit.
	takes := make([]quota.Take, 0, len(msgs))
	countedOn := map[string][]string{} // a batch is mostly one project: its Project read once
	for _, m := range msgs {
		if meter, ok := quota.MeterOf(m.Channel); ok {
			counted, seen := countedOn[m.Project]
			if !seen {
				var err error
				if counted, err = s.countedOn(ctx, m.Project); err != nil {
					return nil, err
				}
				countedOn[m.Project] = counted
			}
			for _, p := range counted {
				takes = append(takes, quota.Take{Project: p, TestMode: m.TestMode, Meter: meter, N: 1})
			}
		}
	}
	if commit && len(bills) == 0 {
		if err := quota.TakeAllAndCommit(ctx, tx, now, takes, s.limitsOf(ctx)); err != nil {
			return nil, err
		}
		return msgs, nil
	}
	// A batch that pays takes its limits first and then its balances, the order every
	// transaction holding both keeps (a fallback to SMS, a broadcast's chunk).
	if err := quota.TakeAll(ctx, tx, now, takes, s.limitsOf(ctx)); err != nil {
		return nil, err
	}
	if err := pay(ctx, tx, bills, now); err != nil {
		return nil, err
	}
	if commit {
		if err := tx.Commit(ctx); err != nil {
			return nil, &quota.ErrCommitUnknown{Err: err}
		}
	}
	return msgs, nil
}

// SetPrices makes live sends paid for from the project's balance at the prices p finds.
func (s *Service) SetPrices(p *billing.Prices) { s.prices = p }

// bill is what one project of a batch pays, once its sends are within their limits.
type bill struct {
	acct    billing.Account
	charges []billing.Charge
	email   bool
}

// price prices msgs, before they are stored (their costs go in with them): SMS and voice per
// message (SMS per segment); an email needs a balance above zero. A project no PriceList prices
// is charged nothing; test traffic shows its price and pays nothing. It returns the projects
// that pay, in one order (balances are locked in it), for pay.
func (s *Service) price(ctx context.Context, msgs []db.Message) ([]bill, error) {
	if s.prices == nil {
		return nil, nil
	}
	byProject := map[string][]int{}
	var projects []string
	for i, m := range msgs {
		if _, seen := byProject[m.Project]; !seen {
			projects = append(projects, m.Project)
		}
		byProject[m.Project] = append(byProject[m.Project], i)
	}
	sort.Strings(projects)
	var bills []bill
	for _, project := range projects {
		list, err := s.prices.For(ctx, project)
		if err != nil {
			return nil, err
		}
		if list == nil {
			continue
		}
		var charges []billing.Charge
		live, email := false, false
		for _, i := range byProject[project] {
			m := &msgs[i]
			if !billing.Charged[m.Channel] {
				email = email || (m.Channel == "email" && !m.TestMode)
				continue
			}
			q, ok, err := billing.QuoteOf(list, m.Channel, m.Recipient, deref(m.Body))
			if err != nil {
				return nil, err
			}
			if !ok {
				continue // an unpriced destination costs nothing (docs/limits.md)
			}
			charged := int64(0)
			if !m.TestMode {
				charged, live = int64(q.Price), true
				charges = append(charges, billing.Charge{MessageID: m.ID, Amount: q.Price})
			}
			price, provider := int64(q.Price), int64(q.ProviderCost)
			m.CostMicros, m.CostProviderMicros, m.ChargedMicros = &price, &provider, &charged
		}
		if live || email {
			acct, err := s.account(ctx, project, list)
			if err != nil {
				return nil, err
			}
			bills = append(bills, bill{acct, charges, email})
		}
	}
	return bills, nil
}

// chargeStored prices and pays for a message already stored, inside tx.
func (s *Service) chargeStored(ctx context.Context, tx pgx.Tx, m db.Message, now time.Time) error {
	msgs := []db.Message{m}
	bills, err := s.price(ctx, msgs)
	if err != nil {
		return err
	}
	if p := msgs[0]; p.CostMicros != nil {
		from, to := partition.Bounds([]string{p.ID})
		if err := db.Planned(tx).SetMessageCosts(ctx, db.SetMessageCostsParams{Ids: []string{p.ID}, Costs: []int64{*p.CostMicros},
			ProviderCosts: []int64{*p.CostProviderMicros}, Charged: []int64{*p.ChargedMicros}, CreatedFrom: from, CreatedTo: to}); err != nil {
			return fmt.Errorf("record costs: %w", err)
		}
	}
	return pay(ctx, tx, bills, now)
}

// pay takes what bills charge from their balances inside tx. Past the credit limit the send is
// 402 insufficient_balance and the caller rolls back.
func pay(ctx context.Context, tx pgx.Tx, bills []bill, now time.Time) error {
	subAccounts := false
	for _, b := range bills {
		subAccounts = subAccounts || b.acct.Parent != nil
	}
	if subAccounts && len(bills) > 1 {
		// A sub-account's charge takes its parent's balance too: every balance of the batch is
		// locked first, in one order, so batches with a parent and its sub-accounts cannot deadlock.
		accts := make([]billing.Account, len(bills))
		for i, b := range bills {
			accts[i] = b.acct
		}
		if err := billing.LockAll(ctx, tx, accts, now); err != nil {
			return err
		}
	}
	for _, b := range bills {
		if err := billing.ChargeAll(ctx, tx, b.acct, b.charges, b.email, now); err != nil {
			return err
		}
	}
	return nil
}

// account is what charging project needs: a Free project (not a sub-account) opens with the
// price list's free credit; a sub-account's parent pays up to its creditLimit past its balance.
func (s *Service) account(ctx context.Context, project string, list *v1alpha1.PriceList) (billing.Account, error) {
	p, err := s.project(ctx, project)
	if err != nil {
		return billing.Account{}, err
	}
	return s.prices.Account(ctx, project, p, list)
}

// project reads the Project of a namespace (the informer cache); nil when it has none.
func (s *Service) project(ctx context.Context, project string) (*v1alpha1.Project, error) {
	return kubewrite.ProjectOf(ctx, s.reader, project)
}

// parentOf is the parent of a sub-account, "" for a project that is not one.
func (s *Service) parentOf(ctx context.Context, project string) (string, error) {
	p, err := s.project(ctx, project)
	if err != nil || p == nil {
		return "", err
	}
	return p.Spec.Parent, nil
}

// countedOn is the projects whose counters project's messages count on, each under its own
// limits: the project's, and a sub-account's parent's too, so that a parent's ceilings and
// allowance cover its sub-accounts together (N sub-accounts are not N times the limits).
func (s *Service) countedOn(ctx context.Context, project string) ([]string, error) {
	parent, err := s.parentOf(ctx, project)
	if err != nil || parent == "" {
		return []string{project}, err
	}
	return []string{project, parent}, nil
}

// limitsOf reads the sending limits of a project from its Project resource.
func (s *Service) limitsOf(ctx context.Context) func(project string) (quota.Limits, error) {
	return func(project string) (quota.Limits, error) {
		p, err := s.project(ctx, project)
		if err != nil {
			return quota.Limits{}, err
		}
		return quota.Of(p), nil
	}
}

// listHeaders gives a broadcast's email its one-click unsubscribe header fields, stored with the
// message: the relay sends them, and the message shows them (a test key's too, which the sandbox
// never sends).
func (s *Service) listHeaders(o *Outbound) error {
	if o.Channel != string(v1alpha1.ChannelEmail) || o.BroadcastContactID == "" || s.unsubscribe == nil {
		return nil
	}
	h, err := s.unsubscribe.Headers(o.BroadcastContactID, o.UnsubscribeURL)
	if err != nil {
		return fmt.Errorf("unsubscribe headers of %s: %w", o.BroadcastContactID, err)
	}
	o.Options.Headers = h
	return nil
}

// bulkPriority is the River priority of a broadcast's dispatches: a single send's (1) goes
// first, so a running broadcast does not hold it up.
const bulkPriority = 3

// dispatchOpts are the dispatch job's options for o: nil (River's defaults) for a single send.
func dispatchOpts(o *Outbound) *river.InsertOpts {
	if o.BroadcastContactID == "" {
		return nil
	}
	return &river.InsertOpts{Priority: bulkPriority}
}

// stored is o as its row: queued, with a new id.
func stored(o *Outbound, now time.Time) (db.Message, error) {
	id, err := newMessageID(now)
	if err != nil {
		return db.Message{}, err
	}
	conversation := o.ConversationID()
	m := db.Message{ID: id, Project: o.Project, TestMode: o.TestMode, Sender: o.Sender, Direction: "outbound",
		Channel: o.Channel, MessageType: o.MessageType, Status: "queued", Recipient: o.To, Originator: o.From,
		Subject: o.Subject, ConversationID: &conversation, CreatedAt: now, UpdatedAt: now}
	if o.BroadcastContactID != "" {
		contact := o.BroadcastContactID
		m.BroadcastContactID, m.RiskReviewed = &contact, true
	}
	if o.Text != "" {
		text := o.Text
		m.Body = &text
	}
	if len(o.Metadata) > 0 {
		if m.Metadata, err = json.Marshal(o.Metadata); err != nil {
			return db.Message{}, fmt.Errorf("encode metadata: %w", err)
		}
	}
	if o.Content != nil {
		if m.Content, err = json.Marshal(o.Content.Outbound()); err != nil {
			return db.Message{}, fmt.Errorf("encode content: %w", err)
		}
	}
	if m.Options, err = json.Marshal(o.Options); err != nil {
		return db.Message{}, fmt.Errorf("encode options: %w", err)
	}
	return m, nil
}

// acceptOne accepts one message in its own transaction; an idempotent retry returns
// *ErrDuplicate with the original message.
func (s *Service) acceptOne(ctx context.Context, o Outbound) (db.Message, error) {
	msgs, _, err := s.acceptTx(ctx, []Outbound{o})
	var dup *ErrDuplicate
	if errors.As(err, &dup) {
		original, gerr := db.Planned(s.pool).GetMessageByID(ctx, dup.Original.ID)
		if gerr != nil {
			return db.Message{}, fmt.Errorf("read original message %s: %w", dup.Original.ID, gerr)
		}
		return db.Message{}, &ErrDuplicate{Original: original}
	}
	if err != nil {
		return db.Message{}, err
	}
	return msgs[0], nil
}

// acceptTx accepts batch in a transaction of its own. rolledBack tells that err came from
// Accept itself, so nothing was committed; otherwise the transaction could not begin or its
// commit got no answer, and it may have committed.
func (s *Service) acceptTx(ctx context.Context, batch []Outbound) (msgs []db.Message, rolledBack bool, err error) {
	err = partition.Retry(ctx, s.pool, func() error {
		rolledBack = false
		// A connection rather than the pool's transaction: accept commits the transaction itself,
		// which the pool's wrapper would not know of.
		conn, err := s.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer conn.Release()
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		msgs, err = s.accept(ctx, tx, batch, true)
		if unknown := (*quota.ErrCommitUnknown)(nil); errors.As(err, &unknown) {
			return unknown.Err
		}
		if err != nil {
			rolledBack = true
			// Should the rollback not arrive, Release closes the connection instead of pooling
			// it with a transaction open.
			_ = tx.Rollback(ctx)
		}
		return err
	})
	return msgs, rolledBack, err
}

// claim records the idempotency key for msg and returns the id of the message that owns it. The
// key's lock, held until tx ends, makes a concurrent claim of the same key wait for this one's
// outcome and then see it.
func (s *Service) claim(ctx context.Context, tx pgx.Tx, msg db.Message, key string, since time.Time) (string, error) {
	q := db.InSpanWriting(s.partitions, tx, "message_idempotency_keys", since, msg.CreatedAt.Add(7*partition.Day), msg.CreatedAt, since)
	if err := q.LockKey(ctx, fmt.Sprintf("idempotency/%s/%t/%s", msg.Project, msg.TestMode, key)); err != nil {
		return "", fmt.Errorf("lock idempotency key: %w", err)
	}
	owner, err := q.ClaimIdempotencyKey(ctx, db.ClaimIdempotencyKeyParams{
		Project: msg.Project, TestMode: msg.TestMode, Key: key, MessageID: msg.ID, CreatedAt: msg.CreatedAt, Since: since})
	if err != nil {
		return "", fmt.Errorf("claim idempotency key: %w", err)
	}
	return owner, nil
}

// event enqueues the events of msg's status in tx.
func (s *Service) event(ctx context.Context, tx pgx.Tx, msg db.Message) error {
	_, err := s.deliveries.EnqueueAll(ctx, tx, events(msg)...)
	return err
}

// events are message.<status> for msg, and message.status for the webhooks that ask for every
// change under one name.
func events(msg db.Message) []delivery.Event {
	data := map[string]any{"messageId": msg.ID, "status": msg.Status, "channel": msg.Channel, "to": msg.Recipient}
	if msg.ErrorCode != nil {
		data["errorCode"], data["errorMessage"] = *msg.ErrorCode, deref(msg.ErrorMessage)
	}
	ev := delivery.Event{Project: msg.Project, Name: string(v1alpha1.MessageEvent(msg.Status)),
		Sender: msg.Sender, From: msg.Originator, To: msg.Recipient, Transport: msg.Channel, Data: data, Mode: delivery.ModeOf(msg.TestMode)}
	status := ev
	status.Name = string(v1alpha1.EventMessageStatus)
	return []delivery.Event{ev, status}
}
