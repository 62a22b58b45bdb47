package httpapi

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/delivery"
)

// access says who may call a route.
type access int

const (
	// public routes need no key (API descriptions).
	public access = iota
	// anyKey routes need a valid key, whatever its permissions.
	anyKey
	// permission routes need a key holding route.permission ("*" holds all).
	permission
	// parentOnly routes need a full-access ("*") key of a project that is not a sub-account.
	parentOnly
)

// route is one endpoint: the single table that says what each endpoint needs.
type route struct {
	method     string
	path       string
	access     access
	permission apikey.Permission
	// maxBody bounds the request body; 0 means defaultMaxBody.
	maxBody int64
	// dispatched routes are mounted behind one ServeMux pattern per method and length, and
	// picked by their literal segments: ServeMux refuses pairs such as
	// GET /v1/functions/deployments/{deploymentId} and GET /v1/functions/{functionId}/logs.
	dispatched bool
	// send names the API generation of a send (v1, v2), timed in sendMetrics.
	send   string
	handle http.HandlerFunc
}

// sendMaxBody bounds a send's body. Email attachments may carry 40 MB (40 MiB) of content in
// total, which is 53.3 MiB in base64; a 41 MiB attachment is 54.7 MiB. 64 MiB leaves room for the
// rest of the body (text, htmlBody, metadata, 50 items' names, base64 wrapped into lines), so
// content over the limit is answered with its field (400, attachments) and only a body that
// could never be valid with 413. The body is read only after the key and the request rate are
// checked, and its base64 is decoded once, straight from it (base64Body).
const sendMaxBody = 64 << 20

// routes is the API. docs/permissions.md lists it for users; keep the two together.
func (s *Server) routes() []route {
	return []route{
		{method: "GET", path: "/v1/openapi.json", access: public, handle: s.openAPI("v1")},
		{method: "GET", path: "/v2/openapi.json", access: public, handle: s.openAPI("v2")},
		{method: "GET", path: "/v1/me", access: anyKey, handle: s.me},
		{method: "GET", path: "/v1/balance", access: anyKey, handle: s.getBalance},

		{method: "POST", path: "/v1/messages", access: permission, permission: apikey.PermissionMessagesSend, maxBody: sendMaxBody, send: "v1", handle: s.sendMessage},
		{method: "GET", path: "/v1/messages", access: permission, permission: apikey.PermissionMessagesRead, handle: s.listMessages},
		{method: "GET", path: "/v1/messages/{messageId}", access: permission, permission: apikey.PermissionMessagesRead, handle: s.getMessage},
		{method: "GET", path: "/v1/messages/{messageId}/attachments", access: permission, permission: apikey.PermissionMessagesRead, handle: s.listMessageAttachments},
		{method: "GET", path: "/v1/messages/{messageId}/media", access: permission, permission: apikey.PermissionMessagesRead, handle: s.messageMedia},
		{method: "POST", path: "/v2/messages", access: permission, permission: apikey.PermissionMessagesSend, maxBody: sendMaxBody, send: "v2", handle: s.sendMessageV2},
		{method: "GET", path: "/v2/messages", access: permission, permission: apikey.PermissionMessagesRead, handle: s.listMessagesV2},
		{method: "GET", path: "/v2/messages/{messageId}", access: permission, permission: apikey.PermissionMessagesRead, handle: s.getMessageV2},
		{method: "POST", path: "/v1/messages/{messageId}/typing", access: permission, permission: apikey.PermissionMessagesSend, handle: s.typing},
		{method: "POST", path: "/v1/messages/{messageId}/reactions", access: permission, permission: apikey.PermissionMessagesSend, handle: s.react},
		{method: "POST", path: "/v1/sandbox/inbound", access: permission, permission: apikey.PermissionMessagesSend, handle: s.injectInbound},

		// Conversations are message history: reading them needs messages:read.
		{method: "GET", path: "/v1/conversations", access: permission, permission: apikey.PermissionMessagesRead, handle: s.listConversations(false)},
		{method: "GET", path: "/v1/conversations/{conversationId}", access: permission, permission: apikey.PermissionMessagesRead, handle: s.getConversation(false)},
		{method: "GET", path: "/v1/conversations/{conversationId}/messages", access: permission, permission: apikey.PermissionMessagesRead, handle: s.listConversationMessages},
		{method: "POST", path: "/v1/conversations/{conversationId}/read", access: permission, permission: apikey.PermissionMessagesRead, handle: s.readConversation},
		{method: "GET", path: "/v2/conversations", access: permission, permission: apikey.PermissionMessagesRead, handle: s.listConversations(true)},
		{method: "GET", path: "/v2/conversations/{conversationId}", access: permission, permission: apikey.PermissionMessagesRead, handle: s.getConversation(true)},

		{method: "POST", path: "/v1/contacts", access: permission, permission: apikey.PermissionContactsWrite, handle: s.createContact},
		{method: "GET", path: "/v1/contacts", access: permission, permission: apikey.PermissionContactsRead, handle: s.listContacts},
		{method: "GET", path: "/v1/contacts/{contactId}", access: permission, permission: apikey.PermissionContactsRead, handle: s.getContact},
		{method: "PATCH", path: "/v1/contacts/{contactId}", access: permission, permission: apikey.PermissionContactsWrite, handle: s.updateContact},
		{method: "DELETE", path: "/v1/contacts/{contactId}", access: permission, permission: apikey.PermissionContactsWrite, handle: s.deleteContact},
		{method: "POST", path: "/v1/contacts/{contactId}/merge", access: permission, permission: apikey.PermissionContactsWrite, handle: s.mergeContacts},
		{method: "GET", path: "/v1/contacts/phone/{phoneNumber}", access: permission, permission: apikey.PermissionContactsRead, handle: s.getContactByPhone},
		{method: "POST", path: "/v1/contacts/{contactId}/channels", access: permission, permission: apikey.PermissionContactsWrite, handle: s.addContactChannel},
		{method: "PATCH", path: "/v1/contacts/{contactId}/channels/{channelId}", access: permission, permission: apikey.PermissionContactsWrite, handle: s.updateContactChannel},
		{method: "DELETE", path: "/v1/contacts/{contactId}/channels/{channelId}", access: permission, permission: apikey.PermissionContactsWrite, handle: s.deleteContactChannel},
		{method: "POST", path: "/v1/contacts/{contactId}/channels/{channelId}/primary", access: permission, permission: apikey.PermissionContactsWrite, handle: s.setPrimaryContactChannel},
		{method: "POST", path: "/v2/contacts", access: permission, permission: apikey.PermissionContactsWrite, handle: s.createContact},
		{method: "GET", path: "/v2/contacts", access: permission, permission: apikey.PermissionContactsRead, handle: s.listContacts},
		{method: "GET", path: "/v2/contacts/{contactId}", access: permission, permission: apikey.PermissionContactsRead, handle: s.getContact},
		{method: "PATCH", path: "/v2/contacts/{contactId}", access: permission, permission: apikey.PermissionContactsWrite, handle: s.updateContact},
		{method: "DELETE", path: "/v2/contacts/{contactId}", access: permission, permission: apikey.PermissionContactsWrite, handle: s.deleteContact},

		// Senders are configuration: any key reads them (a sending key needs their ids), a full
		// key changes them.
		{method: "POST", path: "/v1/senders", access: permission, permission: apikey.PermissionAll, handle: s.createSender},
		{method: "GET", path: "/v1/senders", access: anyKey, handle: s.listSenders},
		{method: "GET", path: "/v1/senders/{senderId}", access: anyKey, handle: s.getSender},
		{method: "PATCH", path: "/v1/senders/{senderId}", access: permission, permission: apikey.PermissionAll, handle: s.updateSender},
		{method: "DELETE", path: "/v1/senders/{senderId}", access: permission, permission: apikey.PermissionAll, handle: s.deleteSender},
		{method: "POST", path: "/v1/senders/{senderId}/webhook/secret", access: permission, permission: apikey.PermissionAll, handle: s.rotateSenderSecret},
		// The delivery log of a sender's webhook (Switchboard's own routes; docs/webhooks.md).
		{method: "GET", path: "/v1/senders/{senderId}/webhook/deliveries", access: permission, permission: apikey.PermissionAll, handle: s.listDeliveries(true)},
		{method: "POST", path: "/v1/senders/{senderId}/webhook/deliveries/replay", access: permission, permission: apikey.PermissionAll, handle: s.replayFailedDeliveries(true)},
		{method: "GET", path: "/v1/senders/{senderId}/webhook/deliveries/{deliveryId}", access: permission, permission: apikey.PermissionAll, handle: s.getDelivery(true)},
		{method: "POST", path: "/v1/senders/{senderId}/webhook/deliveries/{deliveryId}/replay", access: permission, permission: apikey.PermissionAll, handle: s.replayDelivery(true)},
		{method: "POST", path: "/v1/senders/{senderId}/webhook/enable", access: permission, permission: apikey.PermissionAll,
			handle: s.enableEndpoint(func(r *http.Request) delivery.Endpoint { return delivery.SenderEndpoint(r.PathValue("senderId")) })},
		{method: "POST", path: "/v1/senders/{senderId}/telegram", access: permission, permission: apikey.PermissionAll, handle: s.attachTelegram},
		{method: "DELETE", path: "/v1/senders/{senderId}/telegram", access: permission, permission: apikey.PermissionAll, handle: s.detachTelegram},
		{method: "GET", path: "/v1/senders/{senderId}/profile", access: anyKey, handle: s.getSenderProfile},
		{method: "PATCH", path: "/v1/senders/{senderId}/profile", access: permission, permission: apikey.PermissionAll, handle: s.updateSenderProfile},
		{method: "POST", path: "/v1/senders/{senderId}/profile/picture", access: permission, permission: apikey.PermissionAll, handle: s.updateSenderPicture},
		{method: "POST", path: "/v1/senders/{senderId}/channels/{channel}/activate", access: permission, permission: apikey.PermissionAll, handle: s.activateSenderChannel},

		// Invitations connect client accounts into senders. They hold the client's contact
		// details and live links: only a full key reads, makes and cancels them.
		{method: "POST", path: "/v1/invitations", access: permission, permission: apikey.PermissionAll, handle: s.createInvitation},
		{method: "GET", path: "/v1/invitations", access: permission, permission: apikey.PermissionAll, handle: s.listInvitations},
		{method: "GET", path: "/v1/invitations/{invitationId}", access: permission, permission: apikey.PermissionAll, handle: s.getInvitation},
		{method: "POST", path: "/v1/invitations/{invitationId}/cancel", access: permission, permission: apikey.PermissionAll, handle: s.cancelInvitation},
		{method: "POST", path: "/v1/invitations/webhook", access: permission, permission: apikey.PermissionAll, handle: s.putProjectWebhook(v1alpha1.WebhookKindInvitations)},
		{method: "POST", path: "/v1/invitations/webhook/enable", access: permission, permission: apikey.PermissionAll,
			handle: s.enableEndpoint(func(*http.Request) delivery.Endpoint { return delivery.InvitationsEndpoint })},
		{method: "GET", path: "/v2/channels", access: anyKey, handle: s.listChannels},
		{method: "POST", path: "/v2/channels", access: permission, permission: apikey.PermissionAll, handle: s.createChannel},
		{method: "GET", path: "/v2/channels/{address}", access: anyKey, handle: s.getChannel},
		{method: "POST", path: "/v2/channels/{address}/{type}/activate", access: permission, permission: apikey.PermissionAll, handle: s.setChannelActive(true)},
		{method: "POST", path: "/v2/channels/{address}/{type}/deactivate", access: permission, permission: apikey.PermissionAll, handle: s.setChannelActive(false)},
		{method: "DELETE", path: "/v2/channels/{address}/{type}", access: permission, permission: apikey.PermissionAll, handle: s.deleteChannel},
		{method: "POST", path: "/v1/email-domains", access: permission, permission: apikey.PermissionAll, handle: s.createEmailDomain},
		{method: "GET", path: "/v1/email-domains", access: anyKey, handle: s.listEmailDomains},
		{method: "GET", path: "/v1/email-domains/{domainId}", access: anyKey, handle: s.getEmailDomain},
		{method: "POST", path: "/v1/email-domains/{domainId}/verify", access: permission, permission: apikey.PermissionAll, handle: s.verifyEmailDomain},
		{method: "DELETE", path: "/v1/email-domains/{domainId}", access: permission, permission: apikey.PermissionAll, handle: s.deleteEmailDomain},
		{method: "POST", path: "/v2/email-domains", access: permission, permission: apikey.PermissionAll, handle: s.createEmailDomain},
		{method: "GET", path: "/v2/email-domains", access: anyKey, handle: s.listEmailDomains},
		{method: "GET", path: "/v2/email-domains/{domainId}", access: anyKey, handle: s.getEmailDomain},
		{method: "POST", path: "/v2/email-domains/{domainId}/verify", access: permission, permission: apikey.PermissionAll, handle: s.verifyEmailDomain},
		{method: "DELETE", path: "/v2/email-domains/{domainId}", access: permission, permission: apikey.PermissionAll, handle: s.deleteEmailDomain},
		{method: "GET", path: "/v1/email-suppressions", access: permission, permission: apikey.PermissionMessagesRead, handle: s.listSuppressions},
		{method: "POST", path: "/v1/email-suppressions", access: permission, permission: apikey.PermissionAll, handle: s.addSuppression},
		{method: "GET", path: "/v1/email-suppressions/{email}", access: permission, permission: apikey.PermissionMessagesRead, handle: s.getSuppression},
		{method: "DELETE", path: "/v1/email-suppressions/{email}", access: permission, permission: apikey.PermissionAll, handle: s.deleteSuppression},
		{method: "GET", path: "/v2/email-suppressions", access: permission, permission: apikey.PermissionMessagesRead, handle: s.listSuppressions},
		{method: "POST", path: "/v2/email-suppressions", access: permission, permission: apikey.PermissionAll, handle: s.addSuppression},
		{method: "GET", path: "/v2/email-suppressions/{email}", access: permission, permission: apikey.PermissionMessagesRead, handle: s.getSuppression},
		{method: "DELETE", path: "/v2/email-suppressions/{email}", access: permission, permission: apikey.PermissionAll, handle: s.deleteSuppression},
		{method: "POST", path: "/v1/introspect/email", access: permission, permission: apikey.PermissionMessagesRead, handle: s.introspectEmail},
		{method: "POST", path: "/v1/introspect/phone", access: permission, permission: apikey.PermissionMessagesRead, handle: s.introspectPhone},
		// Broadcasts: reading needs messages:read, creating and changing them messages:send.
		{method: "POST", path: "/v1/broadcasts", access: permission, permission: apikey.PermissionMessagesSend, handle: s.createBroadcast},
		{method: "GET", path: "/v1/broadcasts", access: permission, permission: apikey.PermissionMessagesRead, handle: s.listBroadcasts},
		{method: "GET", path: "/v1/broadcasts/{broadcastId}", access: permission, permission: apikey.PermissionMessagesRead, handle: s.getBroadcast},
		{method: "PATCH", path: "/v1/broadcasts/{broadcastId}", access: permission, permission: apikey.PermissionMessagesSend, handle: s.updateBroadcast},
		{method: "DELETE", path: "/v1/broadcasts/{broadcastId}", access: permission, permission: apikey.PermissionMessagesSend, handle: s.deleteBroadcast},
		{method: "POST", path: "/v1/broadcasts/{broadcastId}/contacts", access: permission, permission: apikey.PermissionMessagesSend, maxBody: 4 << 20, handle: s.addBroadcastContacts},
		{method: "GET", path: "/v1/broadcasts/{broadcastId}/contacts", access: permission, permission: apikey.PermissionMessagesRead, handle: s.listBroadcastContacts},
		{method: "DELETE", path: "/v1/broadcasts/{broadcastId}/contacts/{contactId}", access: permission, permission: apikey.PermissionMessagesSend, handle: s.removeBroadcastContact},
		{method: "POST", path: "/v1/broadcasts/{broadcastId}/send", access: permission, permission: apikey.PermissionMessagesSend, handle: s.sendBroadcast},
		{method: "PATCH", path: "/v1/broadcasts/{broadcastId}/schedule", access: permission, permission: apikey.PermissionMessagesSend, handle: s.rescheduleBroadcast},
		{method: "POST", path: "/v1/broadcasts/{broadcastId}/cancel", access: permission, permission: apikey.PermissionMessagesSend, handle: s.cancelBroadcast},
		{method: "POST", path: "/v1/broadcasts/{broadcastId}/escalate", access: permission, permission: apikey.PermissionMessagesSend, handle: s.escalateBroadcast},
		{method: "POST", path: "/v1/broadcasts/{broadcastId}/retry-review", access: permission, permission: apikey.PermissionMessagesSend, handle: s.retryBroadcastReview},
		{method: "GET", path: "/v1/broadcasts/{broadcastId}/progress", access: permission, permission: apikey.PermissionMessagesRead, handle: s.broadcastProgress},

		// v2 campaigns: the same broadcasts, named by addresses.
		{method: "POST", path: "/v2/campaigns", access: permission, permission: apikey.PermissionMessagesSend, handle: s.createV2Campaign},
		{method: "GET", path: "/v2/campaigns", access: permission, permission: apikey.PermissionMessagesRead, handle: s.listV2Campaigns},
		{method: "GET", path: "/v2/campaigns/{campaignId}", access: permission, permission: apikey.PermissionMessagesRead, handle: s.getV2Campaign},
		{method: "DELETE", path: "/v2/campaigns/{campaignId}", access: permission, permission: apikey.PermissionMessagesSend, handle: s.deleteV2Campaign},
		{method: "POST", path: "/v2/campaigns/{campaignId}/recipients", access: permission, permission: apikey.PermissionMessagesSend, maxBody: 4 << 20, handle: s.addV2CampaignRecipients},
		{method: "POST", path: "/v2/campaigns/{campaignId}/send", access: permission, permission: apikey.PermissionMessagesSend, handle: s.sendV2Campaign},
		{method: "POST", path: "/v2/campaigns/{campaignId}/cancel", access: permission, permission: apikey.PermissionMessagesSend, handle: s.cancelV2Campaign},
		{method: "GET", path: "/v2/campaigns/{campaignId}/progress", access: permission, permission: apikey.PermissionMessagesRead, handle: s.v2CampaignProgress},

		// 10DLC registration: a brand holds the business's tax id, address and contacts, so only a
		// full-access key reads or registers one; campaigns are read by any key. use-cases is
		// routed before {brandId}; the mux prefers the literal segment anyway.
		{method: "GET", path: "/v1/10dlc/brands/use-cases", access: anyKey, handle: s.brandUseCases},
		{method: "POST", path: "/v1/10dlc/brands", access: permission, permission: apikey.PermissionAll, handle: s.createBrand},
		{method: "GET", path: "/v1/10dlc/brands", access: permission, permission: apikey.PermissionAll, handle: s.listBrands},
		{method: "GET", path: "/v1/10dlc/brands/{brandId}", access: permission, permission: apikey.PermissionAll, handle: s.getBrand},
		{method: "PATCH", path: "/v1/10dlc/brands/{brandId}", access: permission, permission: apikey.PermissionAll, handle: s.updateBrand},
		{method: "DELETE", path: "/v1/10dlc/brands/{brandId}", access: permission, permission: apikey.PermissionAll, handle: s.deleteBrand},
		{method: "POST", path: "/v1/10dlc/brands/{brandId}/submit", access: permission, permission: apikey.PermissionAll, handle: s.submitBrand},
		{method: "POST", path: "/v1/10dlc/brands/{brandId}/sync", access: permission, permission: apikey.PermissionAll, handle: s.syncBrand},
		{method: "POST", path: "/v1/10dlc/campaigns", access: permission, permission: apikey.PermissionAll, handle: s.createCampaign},
		{method: "GET", path: "/v1/10dlc/campaigns", access: anyKey, handle: s.listCampaigns},
		{method: "GET", path: "/v1/10dlc/campaigns/{campaignId}", access: anyKey, handle: s.getCampaign},
		{method: "PATCH", path: "/v1/10dlc/campaigns/{campaignId}", access: permission, permission: apikey.PermissionAll, handle: s.updateCampaign},
		{method: "DELETE", path: "/v1/10dlc/campaigns/{campaignId}", access: permission, permission: apikey.PermissionAll, handle: s.deleteCampaign},
		{method: "POST", path: "/v1/10dlc/campaigns/{campaignId}/submit", access: permission, permission: apikey.PermissionAll, handle: s.submitCampaign},
		{method: "POST", path: "/v1/10dlc/campaigns/{campaignId}/sync", access: permission, permission: apikey.PermissionAll, handle: s.syncCampaign},
		{method: "GET", path: "/v1/10dlc/campaigns/{campaignId}/phone-numbers", access: anyKey, handle: s.listCampaignNumbers},
		{method: "POST", path: "/v1/10dlc/campaigns/{campaignId}/phone-numbers", access: permission, permission: apikey.PermissionAll, handle: s.assignCampaignNumber},
		{method: "DELETE", path: "/v1/10dlc/campaigns/{campaignId}/phone-numbers/{assignmentId}", access: permission, permission: apikey.PermissionAll, handle: s.unassignCampaignNumber},

		{method: "POST", path: "/v1/templates/sync", access: permission, permission: apikey.PermissionTemplatesWrite, handle: s.syncTemplates},
		{method: "POST", path: "/v1/templates", access: permission, permission: apikey.PermissionTemplatesWrite, handle: s.createTemplate},
		{method: "GET", path: "/v1/templates", access: permission, permission: apikey.PermissionTemplatesRead, handle: s.listTemplates},
		{method: "GET", path: "/v1/templates/{templateId}", access: permission, permission: apikey.PermissionTemplatesRead, handle: s.getTemplate},
		{method: "DELETE", path: "/v1/templates/{templateId}", access: permission, permission: apikey.PermissionTemplatesWrite, handle: s.deleteTemplate},
		{method: "POST", path: "/v1/templates/{templateId}/submit", access: permission, permission: apikey.PermissionTemplatesWrite, handle: s.submitTemplate},
		{method: "POST", path: "/v2/templates", access: permission, permission: apikey.PermissionTemplatesWrite, handle: s.createTemplate},
		{method: "GET", path: "/v2/templates", access: permission, permission: apikey.PermissionTemplatesRead, handle: s.listTemplates},
		{method: "GET", path: "/v2/templates/{templateId}", access: permission, permission: apikey.PermissionTemplatesRead, handle: s.getTemplate},
		{method: "DELETE", path: "/v2/templates/{templateId}", access: permission, permission: apikey.PermissionTemplatesWrite, handle: s.deleteTemplate},
		{method: "POST", path: "/v2/templates/{templateId}/submit", access: permission, permission: apikey.PermissionTemplatesWrite, handle: s.submitTemplate},
		{method: "GET", path: "/v2/webhook", access: permission, permission: apikey.PermissionAll, handle: s.getWebhookV2},
		{method: "PUT", path: "/v2/webhook", access: permission, permission: apikey.PermissionAll, handle: s.putProjectWebhook(v1alpha1.WebhookKindV2)},
		{method: "DELETE", path: "/v2/webhook", access: permission, permission: apikey.PermissionAll, handle: s.deleteWebhookV2},
		{method: "POST", path: "/v2/webhook/secret", access: permission, permission: apikey.PermissionAll, handle: s.rotateWebhookV2Secret},
		// The delivery log and the endpoints' health (Switchboard's own routes; docs/webhooks.md).
		{method: "GET", path: "/v2/webhook/deliveries", access: permission, permission: apikey.PermissionAll, handle: s.listDeliveries(false)},
		{method: "POST", path: "/v2/webhook/deliveries/replay", access: permission, permission: apikey.PermissionAll, handle: s.replayFailedDeliveries(false)},
		{method: "GET", path: "/v2/webhook/deliveries/{deliveryId}", access: permission, permission: apikey.PermissionAll, handle: s.getDelivery(false)},
		{method: "POST", path: "/v2/webhook/deliveries/{deliveryId}/replay", access: permission, permission: apikey.PermissionAll, handle: s.replayDelivery(false)},
		{method: "GET", path: "/v2/webhook/endpoints", access: permission, permission: apikey.PermissionAll, handle: s.listEndpoints},
		{method: "POST", path: "/v2/webhook/enable", access: permission, permission: apikey.PermissionAll,
			handle: s.enableEndpoint(func(*http.Request) delivery.Endpoint { return delivery.V2Endpoint })},

		{method: "POST", path: "/v1/sub-accounts", access: parentOnly, handle: s.createSubAccount},
		{method: "GET", path: "/v1/sub-accounts", access: parentOnly, handle: s.listSubAccounts},
		{method: "GET", path: "/v1/sub-accounts/{id}", access: parentOnly, handle: s.getSubAccount},
		{method: "GET", path: "/v1/sub-accounts/{id}/balance", access: parentOnly, handle: s.getSubAccountBalance},
		{method: "PATCH", path: "/v1/sub-accounts/{id}", access: parentOnly, handle: s.updateSubAccount},
		{method: "DELETE", path: "/v1/sub-accounts/{id}", access: parentOnly, handle: s.deactivateSubAccount},
		{method: "POST", path: "/v1/sub-accounts/{id}/api-keys", access: parentOnly, handle: s.createSubAccountKey},
		{method: "GET", path: "/v1/sub-accounts/{id}/api-keys", access: parentOnly, handle: s.listSubAccountKeys},
		{method: "DELETE", path: "/v1/sub-accounts/{id}/api-keys/{keyId}", access: parentOnly, handle: s.revokeSubAccountKey},
	}
}

// allRoutes is the route table: the core's, then each area's own.
func (s *Server) allRoutes() []route {
	out := s.routes()
	for _, area := range [][]route{s.agentRoutes(), s.agentToolRoutes(), s.agentExtraRoutes(), s.agentKnowledgeRoutes(), s.agentFlowRoutes(), s.callRoutes(), s.numberRoutes(), s.regulatoryRoutes(), s.urlRoutes(), s.whatsAppSyncRoutes(), s.functionRoutes()} {
		out = append(out, area...)
	}
	return out
}

// wrongMethodIsNotFound lists the v2 paths that answer a wrong method with 404, not 405 (spec: Errors).
var wrongMethodIsNotFound = []string{"/v2/numbers", "/v2/functions"}

// register mounts every route behind the checks its table row asks for, a 405 for a known path
// with another method, and a 404 for any other path under /v1 and /v2.
func (s *Server) register(mux *http.ServeMux) {
	table := s.allRoutes()
	// A request no row takes: a known path with another method is 405 with Allow (404 on the
	// paths the spec says), anything else 404. Matched here, not with one method-less pattern per
	// path: ServeMux refuses overlapping ones such as /v1/contacts/phone/{phoneNumber} and
	// /v1/contacts/{contactId}/merge.
	unknown := s.guard(route{access: anyKey, handle: func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.EscapedPath()
		var allowed []string
		for _, rt := range table {
			if matchPath(rt.path, path) && !slices.Contains(allowed, rt.method) {
				allowed = append(allowed, rt.method)
			}
		}
		notFoundInstead := slices.ContainsFunc(wrongMethodIsNotFound, func(prefix string) bool {
			return path == prefix || strings.HasPrefix(path, prefix+"/")
		})
		if len(allowed) == 0 || notFoundInstead {
			s.writeError(w, r, notFound())
			return
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		s.writeError(w, r, methodNotAllowed(r.Method, allowed))
	}})
	groups := map[string][]route{}
	var order []string
	for _, rt := range table {
		rt.handle = s.refuseNUL(rt.handle)
		if rt.dispatched {
			pattern := rt.method + " " + genericPath(rt.path)
			if _, ok := groups[pattern]; !ok {
				order = append(order, pattern)
			}
			groups[pattern] = append(groups[pattern], rt)
			continue
		}
		h := s.guard(rt)
		if rt.send != "" {
			h = s.sends.timed(rt.send, h)
		}
		mux.Handle(rt.method+" "+rt.path, h)
	}
	for _, pattern := range order {
		mux.Handle(pattern, s.dispatch(groups[pattern], unknown))
	}
	mux.Handle("/v1/", unknown)
	mux.Handle("/v2/", unknown)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { s.writeError(w, r, notFound()) })
}

// genericPath is the ServeMux pattern dispatched routes share: the version and area kept, every
// later segment a wildcard ({s3}, {s4}, …).
func genericPath(path string) string {
	segs := strings.Split(path, "/")
	for i := 3; i < len(segs); i++ {
		segs[i] = "{s" + strconv.Itoa(i) + "}"
	}
	return strings.Join(segs, "/")
}

// dispatch serves a group of dispatched routes: the one whose path matches with the most
// literal segments, behind its own checks, with its path values set; else unknown.
func (s *Server) dispatch(group []route, unknown http.Handler) http.Handler {
	// A literal segment wins over a wildcard at the first position where two paths differ:
	// /v1/functions/deployments/{deploymentId} before /v1/functions/{functionId}/logs.
	group = slices.Clone(group)
	slices.SortStableFunc(group, func(a, b route) int {
		as, bs := strings.Split(a.path, "/"), strings.Split(b.path, "/")
		for i := range min(len(as), len(bs)) {
			aw, bw := strings.HasPrefix(as[i], "{"), strings.HasPrefix(bs[i], "{")
			if aw != bw {
				if bw {
					return -1
				}
				return 1
			}
		}
		return 0
	})
	guarded := make([]http.Handler, len(group))
	for i, rt := range group {
		guarded[i] = s.guard(rt)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.EscapedPath()
		for i, rt := range group {
			if !matchPath(rt.path, path) {
				continue
			}
			for j, seg := range strings.Split(rt.path, "/") {
				if strings.HasPrefix(seg, "{") {
					r.SetPathValue(strings.Trim(seg, "{}"), r.PathValue("s"+strconv.Itoa(j)))
				}
			}
			guarded[i].ServeHTTP(w, r)
			return
		}
		unknown.ServeHTTP(w, r)
	})
}

// matchPath tells whether a request path fits a route's path, whose {name} segments each match
// one non-empty segment.
func matchPath(pattern, path string) bool {
	want, got := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(want) != len(got) {
		return false
	}
	for i, seg := range want {
		if strings.HasPrefix(seg, "{") && got[i] != "" {
			continue
		}
		if seg != got[i] {
			return false
		}
	}
	return true
}
