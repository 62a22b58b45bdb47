package connectpage

import (
	"golang.org/x/text/language"
)

// The page's languages: English first (the fallback), then the translations.
var (
	languages = []language.Tag{language.English, language.Spanish}
	matcher   = language.NewMatcher(languages)
)

// lang is the page's language for a request's Accept-Language: a translation where one exists,
// else English.
func lang(acceptLanguage string) string {
	tags, _, _ := language.ParseAcceptLanguage(acceptLanguage)
	_, i, _ := matcher.Match(tags...)
	base, _ := languages[i].Base()
	return base.String()
}

// text is the page's wording by language, then key. Every key exists in every language (a test
// holds them to it).
var text = map[string]map[string]string{
	"en": {
		"title":              "Connect your account",
		"invitedBy":          "An invitation from %s",
		"invitedByUnknown":   "An invitation",
		"hello":              "Hello, %s.",
		"what.whatsapp_waba": "Connect your WhatsApp Business account",
		"what.messenger":     "Connect your Facebook Page's Messenger inbox",
		"explain.whatsapp_waba": "You will sign in with Facebook and choose the WhatsApp Business account and phone number to connect. " +
			"Your password is never shared with %s.",
		"explain.messenger": "You will sign in with Facebook and choose the Page whose Messenger conversations to connect. " +
			"Your password is never shared with %s.",
		"preassigned":                      "The phone number %s is provided for you: you do not need a number of your own.",
		"countries":                        "Numbers from these countries can be connected: %s.",
		"connect":                          "Connect with Facebook",
		"retry":                            "Try again",
		"inProgress":                       "Connecting… Finish the steps in the Facebook window. If you closed it, you can start again.",
		"failed":                           "The connection did not finish.",
		"reason.social_cancelled":          "The Facebook window was closed before the connection finished.",
		"reason.social_not_authorized":     "A permission the connection needs was not granted.",
		"reason.signup_abandoned":          "The connection was left unfinished.",
		"reason.provider_no_pages":         "Your Facebook account does not manage any Page. Create a Page, or ask a Page admin to add you, then try again.",
		"reason.internal_error":            "Something went wrong on our side. Please try again in a few minutes.",
		"reason.phone_country_not_allowed": "The phone number you chose is from a country this invitation does not allow.",
		"reason.other":                     "Please try again.",
		"completed":                        "Connected",
		"completedAccount":                 "%s is connected. You can close this page.",
		"expired":                          "This invitation has expired",
		"expiredBody":                      "Ask %s to send you a new invitation.",
		"cancelled":                        "This invitation was cancelled",
		"cancelledBody":                    "Ask %s if you still need to connect.",
		"notFound":                         "There is no invitation at this link",
		"notFoundBody":                     "Check that the link is complete, or ask for a new one.",
		"choosePage":                       "Choose the Page to connect",
		"choosePageBody":                   "Its Messenger conversations will be handled by %s.",
		"usePage":                          "Connect this Page",
		"badState":                         "This sign-in cannot be used",
		"badStateBody":                     "The Facebook sign-in was already used or has expired. Start again from your invitation link.",
		"otherBrowser":                     "Finish connecting in the browser you started in",
		"otherBrowserBody": "For your security, a Facebook sign-in can only be finished in the browser where it was started, with cookies allowed. " +
			"To connect from this browser, start again.",
		"startAgain":   "Start again",
		"scriptNeeded": "This step needs JavaScript turned on in your browser.",
		"expires":      "The link works until %s.",
	},
	"es": {
		"title":              "Conecta tu cuenta",
		"invitedBy":          "Una invitación de %s",
		"invitedByUnknown":   "Una invitación",
		"hello":              "Hola, %s.",
		"what.whatsapp_waba": "Conecta tu cuenta de WhatsApp Business",
		"what.messenger":     "Conecta la bandeja de Messenger de tu página de Facebook",
		"explain.whatsapp_waba": "Iniciarás sesión con Facebook y elegirás la cuenta de WhatsApp Business y el número que quieres conectar. " +
			"Tu contraseña nunca se comparte con %s.",
		"explain.messenger": "Iniciarás sesión con Facebook y elegirás la página cuyas conversaciones de Messenger quieres conectar. " +
			"Tu contraseña nunca se comparte con %s.",
		"preassigned":                      "Te proporcionamos el número %s: no necesitas un número propio.",
		"countries":                        "Se pueden conectar números de estos países: %s.",
		"connect":                          "Conectar con Facebook",
		"retry":                            "Intentar de nuevo",
		"inProgress":                       "Conectando… Completa los pasos en la ventana de Facebook. Si la cerraste, puedes empezar de nuevo.",
		"failed":                           "La conexión no se completó.",
		"reason.social_cancelled":          "La ventana de Facebook se cerró antes de terminar la conexión.",
		"reason.social_not_authorized":     "No se concedió un permiso que la conexión necesita.",
		"reason.signup_abandoned":          "La conexión quedó sin terminar.",
		"reason.provider_no_pages":         "Tu cuenta de Facebook no administra ninguna página. Crea una página, o pide a un administrador que te agregue, y vuelve a intentarlo.",
		"reason.internal_error":            "Algo salió mal de nuestro lado. Vuelve a intentarlo en unos minutos.",
		"reason.phone_country_not_allowed": "El número que elegiste es de un país que esta invitación no permite.",
		"reason.other":                     "Vuelve a intentarlo.",
		"completed":                        "Conectado",
		"completedAccount":                 "%s está conectado. Puedes cerrar esta página.",
		"expired":                          "Esta invitación ha vencido",
		"expiredBody":                      "Pide a %s que te envíe una nueva invitación.",
		"cancelled":                        "Esta invitación fue cancelada",
		"cancelledBody":                    "Consulta a %s si todavía necesitas conectarte.",
		"notFound":                         "No hay ninguna invitación en este enlace",
		"notFoundBody":                     "Comprueba que el enlace esté completo, o pide uno nuevo.",
		"choosePage":                       "Elige la página que quieres conectar",
		"choosePageBody":                   "%s gestionará sus conversaciones de Messenger.",
		"usePage":                          "Conectar esta página",
		"badState":                         "Este inicio de sesión no se puede usar",
		"badStateBody":                     "El inicio de sesión de Facebook ya se usó o venció. Empieza de nuevo desde el enlace de tu invitación.",
		"otherBrowser":                     "Termina la conexión en el navegador en que la empezaste",
		"otherBrowserBody": "Por tu seguridad, un inicio de sesión de Facebook solo puede terminarse en el navegador donde se empezó, con las cookies permitidas. " +
			"Para conectar desde este navegador, empieza de nuevo.",
		"startAgain":   "Empezar de nuevo",
		"scriptNeeded": "Este paso necesita JavaScript activado en tu navegador.",
		"expires":      "El enlace funciona hasta el %s.",
	},
}
