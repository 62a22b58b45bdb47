package contact

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

func TestIdentifiersPerChannel(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		channel, identifier, stored string // stored "" means refused
	}{
		{"sms", "+14155551234", "+14155551234"},
		{"sms", "14155551234", ""},
		{"sms", "+1415555", "+1415555"},
		{"sms", "+141555", ""},
		{"sms", "+1234567890123456", ""},
		{"sms", "+04155551234", ""},
		{"sms", "+1 415 555 1234", ""},
		{"voice", "+5511987654321", "+5511987654321"},
		{"voice", "ana@example.com", ""},
		{"whatsapp", "+5511987654321", "+5511987654321"},
		{"whatsapp", "US.13491208655302741918", "US.13491208655302741918"},
		{"whatsapp", "us.13491208655302741918", ""},
		{"whatsapp", "US.123", ""},
		{"whatsapp", "123456789", ""},
		{"email", "Ana.Souza@Example.COM", "ana.souza@example.com"},
		{"email", "ana@localhost", ""},
		{"email", "ana example@example.com", ""},
		{"email", "+14155551234", ""},
		{"telegram", "123456789", "123456789"},
		{"telegram", "-1001234567890", "-1001234567890"},
		{"telegram", "@ana", ""},
		{"instagram", "17841400000000000", "17841400000000000"},
		{"instagram", "ana.souza", ""},
		{"messenger", "2400000000000000", "2400000000000000"},
		{"messenger", "123456789012345678901", ""},
	} {
		got, msg := normalizeIdentifier(c.channel, c.identifier)
		if c.stored == "" && msg == "" {
			t.Errorf("%s %q accepted as %q, want refused", c.channel, c.identifier, got)
		}
		if c.stored != "" && (msg != "" || got != c.stored) {
			t.Errorf("%s %q = %q (%s), want %q", c.channel, c.identifier, got, msg, c.stored)
		}
	}
}

func paths(errs []apperror.FieldError) []string {
	out := []string{}
	for _, e := range errs {
		out = append(out, e.Path)
	}
	return out
}

func TestCreateValidationNamesEveryInvalidField(t *testing.T) {
	t.Parallel()
	s := func(v string) *string { return &v }
	b := func(v bool) *bool { return &v }
	chans := func(c ...ChannelInput) *[]ChannelInput { return &c }
	sms := ChannelInput{Channel: s("sms"), Identifier: s("+14155551234")}
	for name, c := range map[string]struct {
		in    CreateInput
		paths []string
	}{
		"valid":            {CreateInput{Channels: chans(sms)}, []string{}},
		"no channels":      {CreateInput{DisplayName: s("Ana")}, []string{"channels"}},
		"empty channels":   {CreateInput{Channels: chans()}, []string{"channels"}},
		"unknown channel":  {CreateInput{Channels: chans(ChannelInput{Channel: s("pigeon"), Identifier: s("x")})}, []string{"channels[0].channel"}},
		"no identifier":    {CreateInput{Channels: chans(sms, ChannelInput{Channel: s("email")})}, []string{"channels[1].identifier"}},
		"bad identifier":   {CreateInput{Channels: chans(sms, ChannelInput{Channel: s("email"), Identifier: s("nope")})}, []string{"channels[1].identifier"}},
		"bad country":      {CreateInput{Channels: chans(ChannelInput{Channel: s("sms"), Identifier: s("+14155551234"), CountryCode: s("USA")})}, []string{"channels[0].countryCode"}},
		"long label":       {CreateInput{Channels: chans(ChannelInput{Channel: s("sms"), Identifier: s("+14155551234"), Label: s(strings.Repeat("l", 101))})}, []string{"channels[0].label"}},
		"repeated":         {CreateInput{Channels: chans(sms, sms)}, []string{"channels[1].identifier"}},
		"two primaries":    {CreateInput{Channels: chans(ChannelInput{Channel: s("sms"), Identifier: s("+14155551234"), IsPrimary: b(true)}, ChannelInput{Channel: s("sms"), Identifier: s("+14155551235"), IsPrimary: b(true)})}, []string{"channels[1].isPrimary"}},
		"default not had":  {CreateInput{Channels: chans(sms), DefaultChannel: s("email")}, []string{"defaultChannel"}},
		"default unknown":  {CreateInput{Channels: chans(sms), DefaultChannel: s("fax")}, []string{"defaultChannel"}},
		"long name":        {CreateInput{Channels: chans(sms), DisplayName: s(strings.Repeat("n", 257))}, []string{"displayName"}},
		"long meta value":  {CreateInput{Channels: chans(sms), Metadata: map[string]string{"k": strings.Repeat("v", 501)}}, []string{"metadata.k"}},
		"empty meta key":   {CreateInput{Channels: chans(sms), Metadata: map[string]string{"": "v"}}, []string{"metadata"}},
		"bad tags":         {CreateInput{Channels: chans(sms), Tags: []string{"ok", "", "a,b", " pad", strings.Repeat("t", 65)}}, []string{"tags[1]", "tags[2]", "tags[3]", "tags[4]"}},
		"everything wrong": {CreateInput{Channels: chans(ChannelInput{Channel: s("sms"), Identifier: s("1")}), DisplayName: s(strings.Repeat("n", 257)), Tags: []string{""}}, []string{"channels[0].identifier", "displayName", "tags[0]"}},
	} {
		_, _, errs := checkCreate(c.in)
		if got := paths(errs); !slices.Equal(got, c.paths) {
			t.Errorf("%s: invalid fields %v, want %v", name, got, c.paths)
		}
	}
}

func TestFirstChannelOfATypeIsPrimaryUnlessToldOtherwise(t *testing.T) {
	t.Parallel()
	s := func(v string) *string { return &v }
	b := func(v bool) *bool { return &v }
	ch := func(channel, id string, primary *bool) ChannelInput {
		return ChannelInput{Channel: s(channel), Identifier: s(id), IsPrimary: primary}
	}
	for name, c := range map[string]struct {
		in   []ChannelInput
		want []bool
	}{
		"first of each type": {[]ChannelInput{ch("sms", "+14155550001", nil), ch("sms", "+14155550002", nil), ch("email", "a@example.com", nil)}, []bool{true, false, true}},
		"second asks":        {[]ChannelInput{ch("sms", "+14155550001", nil), ch("sms", "+14155550002", b(true))}, []bool{false, true}},
		"first declines":     {[]ChannelInput{ch("sms", "+14155550001", b(false)), ch("sms", "+14155550002", nil)}, []bool{false, true}},
		"only one declines":  {[]ChannelInput{ch("sms", "+14155550001", b(false))}, []bool{false}},
	} {
		channels, _, errs := checkCreate(CreateInput{Channels: &c.in})
		if len(errs) > 0 {
			t.Fatalf("%s: %v", name, errs)
		}
		var got []bool
		for _, ch := range channels {
			got = append(got, *ch.isPrimary)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: primaries %v, want %v", name, got, c.want)
		}
	}
}

func TestTagFilterReadsBothEncodings(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		values []string
		want   []string
	}{
		{nil, nil},
		{[]string{"vip,chile"}, []string{"vip", "chile"}},
		{[]string{"vip", "chile"}, []string{"vip", "chile"}},
		{[]string{"vip, chile", "vip", ",,"}, []string{"vip", "chile"}},
	} {
		if got := ParseTagFilter(c.values); !slices.Equal(got, c.want) {
			t.Errorf("ParseTagFilter(%q) = %q, want %q", c.values, got, c.want)
		}
	}
}

func TestSearchEscapesLikeWildcards(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"ana": "%ana%", "50%": `%50\%%`, "a_b": `%a\_b%`, `c:\x`: `%c:\\x%`} {
		if got := likePattern(in); got != want {
			t.Errorf("likePattern(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDerivedFields(t *testing.T) {
	t.Parallel()
	us, br := "US", "BR"
	c := Contact{Channels: []Channel{
		{ContactChannel: db.ContactChannel{Channel: "email", Identifier: "ana@example.com", IsPrimary: true}},
		{ContactChannel: db.ContactChannel{Channel: "whatsapp", Identifier: "BR.abcdef1234", IsPrimary: true, CountryCode: &br}},
		{ContactChannel: db.ContactChannel{Channel: "voice", Identifier: "+14155550009", IsPrimary: true, CountryCode: &us}},
		{ContactChannel: db.ContactChannel{Channel: "sms", Identifier: "+14155550001", IsPrimary: false, Verified: true}},
	}}
	if got := c.AvailableChannels(); !slices.Equal(got, []string{"sms", "whatsapp", "email", "voice"}) {
		t.Errorf("AvailableChannels = %v", got)
	}
	// No primary sms, and the primary whatsapp is not a number: the primary voice number.
	if got := c.PrimaryPhone(); got != "+14155550009" {
		t.Errorf("PrimaryPhone = %q", got)
	}
	if got := c.CountryCode(); got != "US" {
		t.Errorf("CountryCode = %q", got)
	}
	if got := c.PrimaryEmail(); got != "ana@example.com" {
		t.Errorf("PrimaryEmail = %q", got)
	}
	if !c.IsVerified() {
		t.Error("a contact with a verified channel is not verified")
	}
	c.Channels[3].IsPrimary = true
	if got := c.PrimaryPhone(); got != "+14155550001" {
		t.Errorf("PrimaryPhone with a primary sms = %q", got)
	}
	if (Contact{}).IsVerified() || (Contact{}).PrimaryPhone() != "" || len((Contact{}).AvailableChannels()) != 0 {
		t.Error("an empty contact has derived values")
	}
	for _, m := range []struct{ total, delivered, want int64 }{{0, 0, 0}, {1000, 3, 333}, {4500, 2, 2250}} {
		if got := AvgDeliveryTimeMs(db.ContactChannel{TotalDeliveryMs: m.total, DeliveredCount: m.delivered}); got != m.want {
			t.Errorf("AvgDeliveryTimeMs(%d/%d) = %d, want %d", m.total, m.delivered, got, m.want)
		}
	}
}

func TestMergeFillsWhatTheTargetLacks(t *testing.T) {
	t.Parallel()
	s := func(v string) *string { return &v }
	target := db.Contact{ID: "ct_t", DisplayName: s("Ana"), Metadata: []byte(`{"plan":"pro"}`), Tags: []string{"vip"}}
	source := db.Contact{ID: "ct_s", DisplayName: s("Ana S."), ProfileName: s("ana_wa"), DefaultChannel: s("whatsapp"),
		Metadata: []byte(`{"plan":"free","city":"Lima"}`), Tags: []string{"peru", "vip"}, Verified: true}
	got := absorb(target, source)
	var meta map[string]string
	_ = json.Unmarshal(got.Metadata, &meta)
	if *got.DisplayName != "Ana" || *got.ProfileName != "ana_wa" || *got.DefaultChannel != "whatsapp" || !got.Verified ||
		!slices.Equal(got.Tags, []string{"vip", "peru"}) || !reflect.DeepEqual(meta, map[string]string{"plan": "pro", "city": "Lima"}) {
		t.Errorf("absorb = %+v (metadata %v)", got, meta)
	}
}
