package telegram

import (
	"regexp"
	"strconv"
	"strings"
)

// ProviderMessageID is the provider id of message messageID in chat chatID. Telegram numbers
// messages per chat, so the chat is part of the id: "<chat id>:<message id>".
func ProviderMessageID(chatID, messageID int64) string {
	return strconv.FormatInt(chatID, 10) + ":" + strconv.FormatInt(messageID, 10)
}

// ParseProviderMessageID reads an id ProviderMessageID made. ok is false for anything else,
// the id of a reaction among them (it names no message).
func ParseProviderMessageID(id string) (chatID, messageID int64, ok bool) {
	chat, msg, found := strings.Cut(id, ":")
	if !found {
		return 0, 0, false
	}
	if !chatIDShape.MatchString(chat) || !messageIDShape.MatchString(msg) {
		return 0, 0, false
	}
	chatID, err1 := strconv.ParseInt(chat, 10, 64)
	messageID, err2 := strconv.ParseInt(msg, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return chatID, messageID, true
}

var messageIDShape = regexp.MustCompile(`^[1-9][0-9]{0,18}$`)

// reactionID is the provider id of a reaction the bot set on a message: it must not be the
// message's own id, which the inbound reply context looks up.
func reactionID(chatID, messageID int64) string {
	return ProviderMessageID(chatID, messageID) + ":reaction"
}
