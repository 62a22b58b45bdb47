package message

import "testing"

func TestClassifyRecipients(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		to, channel string
		want        recipientKind
	}{
		{"+15005550100", "", phoneRecipient},
		{"+123456789012345", "", phoneRecipient},    // 15 digits: the most E.164 allows
		{"+1234567890123456", "", invalidRecipient}, // 16
		{"ada@example.com", "", emailRecipient},
		{"US.1349a8f2c", "", scopedUserRecipient},
		{"123456789", "", chatIDRecipient},
		{"123456789012345", "telegram", chatIDRecipient},
		{"1234567890123456", "", invalidRecipient}, // bare 16 digits: neither E.164 nor a chat id
		{"1234567890123456", "telegram", invalidRecipient},
		{"1234567890123456", "messenger", chatIDRecipient}, // a page-scoped id
		{"17841400000000000", "instagram", chatIDRecipient},
		{"123456789012345678901", "messenger", invalidRecipient},
		{"-1001234567890", "", chatIDRecipient},      // a Telegram supergroup
		{"-1001234567890123", "", chatIDRecipient},   // 16 digits after the minus
		{"-10012345678901234", "", invalidRecipient}, // 17
		{"0612345678", "", invalidRecipient},         // a national number: needs its country code
		{"-0", "", invalidRecipient},
		{"12 34", "", invalidRecipient},
	} {
		if got := classifyFor(c.to, c.channel); got != c.want {
			t.Errorf("classifyFor(%q, %q) = %v, want %v", c.to, c.channel, got, c.want)
		}
	}
}
