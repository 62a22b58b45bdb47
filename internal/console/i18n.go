package console

import (
	"fmt"
	"html/template"
	"strconv"
	"time"

	"github.com/switchboard-io/switchboard/internal/billing"
)

// text is the console's wording by language, then key. Every key exists in every language (a
// test holds them to it).
var text = map[string]map[string]string{
	"en": {
		"brand":                 "Switchboard console",
		"skip":                  "Skip to content",
		"nav.messages":          "Messages",
		"nav.deliveries":        "Webhook deliveries",
		"nav.review":            "Review queue",
		"nav.label":             "Sections",
		"signout":               "Sign out",
		"signedInAs":            "Signed in as %s",
		"project":               "Project",
		"mode":                  "Traffic",
		"mode.live":             "Live",
		"mode.test":             "Test (sandbox)",
		"show":                  "Show",
		"language":              "Español",
		"signin.title":          "Sign in to the console",
		"signin.intro":          "Paste an API key of your project. The console shows that project's traffic of the key's mode, and what the key's permissions allow. The key is not kept in your browser: it is exchanged for a session that ends after 30 minutes without use.",
		"signin.key":            "API key",
		"signin.submit":         "Sign in",
		"signin.refused":        "That key was not accepted. Check that it is whole and has not been revoked.",
		"signin.expired":        "The sign-in form expired. Please sign in again.",
		"signin.linkUsed":       "This sign-in link was already used or has expired. Ask for a new one with `switchboard console login`.",
		"error.title":           "Something is not right",
		"error.session":         "Your session has ended. Sign in again.",
		"error.csrf":            "This form is out of date. Go back, reload the page and try again.",
		"error.internal":        "Something went wrong on our side. Try again in a moment.",
		"error.permission":      "Your API key does not hold the permission this needs (%s).",
		"search":                "Search",
		"filter.to":             "Recipient",
		"filter.status":         "Status",
		"filter.channel":        "Channel",
		"filter.sender":         "Sender",
		"filter.period":         "Made in the last",
		"filter.any":            "Any",
		"period.1h":             "hour",
		"period.24h":            "day",
		"period.168h":           "week",
		"col.when":              "When",
		"col.to":                "To",
		"col.from":              "From",
		"col.channel":           "Channel",
		"col.status":            "Status",
		"col.sender":            "Sender",
		"col.event":             "Event",
		"col.endpoint":          "Endpoint",
		"col.attempts":          "Attempts",
		"col.error":             "Last error",
		"col.actions":           "Actions",
		"messages.none":         "No message matches.",
		"messages.held":         "held",
		"next":                  "Older",
		"message.facts":         "The message",
		"message.body":          "Text",
		"message.provider":      "Provider",
		"message.attempted":     "Providers tried",
		"message.providerId":    "Provider's id",
		"message.error":         "Error",
		"message.cost":          "Charged",
		"message.timeline":      "Timeline",
		"message.deliveries":    "Webhook deliveries of its events",
		"message.noDeliveries":  "No webhook was told of this message.",
		"timeline.created":      "Created",
		"timeline.event":        "Event",
		"timeline.status":       "Status now",
		"attempt":               "Attempt",
		"attempt.replay":        "replay",
		"attempt.latency":       "%d ms",
		"attempt.noAnswer":      "no answer",
		"deliveries.endpoints":  "Endpoints",
		"deliveries.url":        "URL",
		"deliveries.enabled":    "%s is enabled again.",
		"deliveries.state":      "State",
		"deliveries.on":         "Enabled",
		"deliveries.off":        "Disabled",
		"deliveries.lastOk":     "Last success",
		"deliveries.failing":    "Failing since",
		"deliveries.rate":       "Success, 24 h",
		"deliveries.enable":     "Enable",
		"deliveries.replay":     "Replay",
		"deliveries.replayAll":  "Replay its failures since",
		"deliveries.replayed":   "Delivery %s is replayed.",
		"deliveries.replayedN":  "%d failed deliveries are replayed.",
		"deliveries.none":       "No delivery matches.",
		"deliveries.noEndpoint": "The project has no webhook.",
		"deliveries.badRange":   "Name a webhook and a time to replay from.",
		"deliveries.log":        "Log",
		"review.intro":          "Messages a risk rule held wait here until an operator approves them (they are sent) or refuses them (they fail with RISK_REJECTED and their charge returns).",
		"review.none":           "No message is waiting for a decision.",
		"review.rule":           "Rule",
		"review.reason":         "What the rule saw",
		"review.held":           "Held",
		"review.expires":        "Decide before",
		"review.approve":        "Approve",
		"review.refuse":         "Refuse",
		"review.approved":       "Message %s is approved and sent.",
		"review.refused":        "Message %s is refused.",
		"review.operatorsOnly":  "Only an installation operator decides held messages.",
		"review.readOnly":       "An installation operator decides these messages; you see them here.",
		"review.badDecision":    "Choose approve or refuse.",
		"review.holds":          "Held messages",
		"review.urls":           "Escalated URLs",
		"review.urlsIntro":      "URLs the checks rejected and the project asked to have reviewed. Approved, messages with them are sent; refused, they stay refused.",
		"review.noURLs":         "No URL is waiting for a review.",
		"review.url":            "URL",
		"review.why":            "Why it was rejected",
		"review.asked":          "What the project says",
		"review.noURL":          "URL %s is not waiting for a review in this project.",
		"review.url.approved":   "URL %s is approved.",
		"review.url.refused":    "URL %s stays rejected.",
	},
	"es": {
		"brand":                 "Consola de Switchboard",
		"skip":                  "Ir al contenido",
		"nav.messages":          "Mensajes",
		"nav.deliveries":        "Entregas de webhooks",
		"nav.review":            "Cola de revisión",
		"nav.label":             "Secciones",
		"signout":               "Cerrar sesión",
		"signedInAs":            "Sesión de %s",
		"project":               "Proyecto",
		"mode":                  "Tráfico",
		"mode.live":             "Real",
		"mode.test":             "Prueba (sandbox)",
		"show":                  "Mostrar",
		"language":              "English",
		"signin.title":          "Inicia sesión en la consola",
		"signin.intro":          "Pega una clave de API de tu proyecto. La consola muestra el tráfico de ese proyecto en el modo de la clave, y lo que sus permisos permiten. La clave no se guarda en tu navegador: se cambia por una sesión que termina tras 30 minutos sin uso.",
		"signin.key":            "Clave de API",
		"signin.submit":         "Iniciar sesión",
		"signin.refused":        "Esa clave no fue aceptada. Comprueba que esté completa y que no haya sido revocada.",
		"signin.expired":        "El formulario de inicio de sesión venció. Vuelve a iniciar sesión.",
		"signin.linkUsed":       "Este enlace de inicio de sesión ya se usó o venció. Pide uno nuevo con `switchboard console login`.",
		"error.title":           "Algo no está bien",
		"error.session":         "Tu sesión terminó. Vuelve a iniciar sesión.",
		"error.csrf":            "Este formulario ya no es válido. Vuelve atrás, recarga la página e inténtalo de nuevo.",
		"error.internal":        "Algo salió mal de nuestro lado. Inténtalo de nuevo en un momento.",
		"error.permission":      "Tu clave de API no tiene el permiso que esto requiere (%s).",
		"search":                "Buscar",
		"filter.to":             "Destinatario",
		"filter.status":         "Estado",
		"filter.channel":        "Canal",
		"filter.sender":         "Remitente",
		"filter.period":         "Creados en la última",
		"filter.any":            "Cualquiera",
		"period.1h":             "hora",
		"period.24h":            "día",
		"period.168h":           "semana",
		"col.when":              "Cuándo",
		"col.to":                "Para",
		"col.from":              "De",
		"col.channel":           "Canal",
		"col.status":            "Estado",
		"col.sender":            "Remitente",
		"col.event":             "Evento",
		"col.endpoint":          "Destino",
		"col.attempts":          "Intentos",
		"col.error":             "Último error",
		"col.actions":           "Acciones",
		"messages.none":         "Ningún mensaje coincide.",
		"messages.held":         "retenido",
		"next":                  "Anteriores",
		"message.facts":         "El mensaje",
		"message.body":          "Texto",
		"message.provider":      "Proveedor",
		"message.attempted":     "Proveedores intentados",
		"message.providerId":    "Id del proveedor",
		"message.error":         "Error",
		"message.cost":          "Cobrado",
		"message.timeline":      "Cronología",
		"message.deliveries":    "Entregas de webhooks de sus eventos",
		"message.noDeliveries":  "Ningún webhook recibió noticias de este mensaje.",
		"timeline.created":      "Creado",
		"timeline.event":        "Evento",
		"timeline.status":       "Estado actual",
		"attempt":               "Intento",
		"attempt.replay":        "reenvío",
		"attempt.latency":       "%d ms",
		"attempt.noAnswer":      "sin respuesta",
		"deliveries.endpoints":  "Destinos",
		"deliveries.url":        "URL",
		"deliveries.enabled":    "%s está activo de nuevo.",
		"deliveries.state":      "Situación",
		"deliveries.on":         "Activo",
		"deliveries.off":        "Desactivado",
		"deliveries.lastOk":     "Último éxito",
		"deliveries.failing":    "Fallando desde",
		"deliveries.rate":       "Éxito, 24 h",
		"deliveries.enable":     "Activar",
		"deliveries.replay":     "Reenviar",
		"deliveries.replayAll":  "Reenviar sus fallos desde",
		"deliveries.replayed":   "La entrega %s se reenvía.",
		"deliveries.replayedN":  "Se reenvían %d entregas fallidas.",
		"deliveries.none":       "Ninguna entrega coincide.",
		"deliveries.noEndpoint": "El proyecto no tiene webhooks.",
		"deliveries.badRange":   "Indica un webhook y desde cuándo reenviar.",
		"deliveries.log":        "Registro",
		"review.intro":          "Los mensajes que una regla de riesgo retuvo esperan aquí hasta que un operador los apruebe (se envían) o los rechace (fallan con RISK_REJECTED y se devuelve su cobro).",
		"review.none":           "Ningún mensaje espera una decisión.",
		"review.rule":           "Regla",
		"review.reason":         "Lo que vio la regla",
		"review.held":           "Retenido",
		"review.expires":        "Decidir antes de",
		"review.approve":        "Aprobar",
		"review.refuse":         "Rechazar",
		"review.approved":       "El mensaje %s está aprobado y se envía.",
		"review.refused":        "El mensaje %s está rechazado.",
		"review.operatorsOnly":  "Solo un operador de la instalación decide sobre los mensajes retenidos.",
		"review.readOnly":       "Un operador de la instalación decide sobre estos mensajes; aquí los ves.",
		"review.badDecision":    "Elige aprobar o rechazar.",
		"review.holds":          "Mensajes retenidos",
		"review.urls":           "URL escaladas",
		"review.urlsIntro":      "URL que las comprobaciones rechazaron y cuyo examen pidió el proyecto. Aprobadas, los mensajes que las llevan se envían; rechazadas, siguen rechazadas.",
		"review.noURLs":         "Ninguna URL espera un examen.",
		"review.url":            "URL",
		"review.why":            "Por qué se rechazó",
		"review.asked":          "Lo que dice el proyecto",
		"review.noURL":          "La URL %s no espera un examen en este proyecto.",
		"review.url.approved":   "La URL %s está aprobada.",
		"review.url.refused":    "La URL %s sigue rechazada.",
	},
}

// t is the wording of key in lang (English when lang has none).
func t(lang, key string) string {
	if s, ok := text[lang][key]; ok {
		return s
	}
	if s, ok := text["en"][key]; ok {
		return s
	}
	return key
}

// tf is t with arguments.
func tf(lang, key string, args ...any) string { return fmt.Sprintf(t(lang, key), args...) }

// percent writes a share (0 to 1) as a percentage.
func percent(r float64) string { return strconv.FormatFloat(100*r, 'f', 1, 64) + " %" }

// The templates' functions.
var funcs = template.FuncMap{
	"t":  t,
	"tf": tf,
	// when writes an instant in UTC, to the second (machine-readable in a <time> element).
	"when": func(at time.Time) string { return at.UTC().Format("2006-01-02 15:04:05") },
	"iso":  func(at time.Time) string { return at.UTC().Format(time.RFC3339) },
	"whenp": func(at *time.Time) string {
		if at == nil {
			return "–"
		}
		return at.UTC().Format("2006-01-02 15:04:05")
	},
	"deref": func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	},
	"code": func(c *int32) string {
		if c == nil {
			return ""
		}
		return strconv.Itoa(int(*c))
	},
	"money": func(micros *int64) string {
		if micros == nil {
			return "–"
		}
		return strconv.FormatFloat(float64(*micros)/1e6, 'f', 4, 64)
	},
	"pretty": prettyJSON,
	// micros writes an amount of money kept in millionths, to the cent and beyond.
	"micros": func(m any) string {
		var v int64
		switch x := m.(type) {
		case int64:
			v = x
		case billing.Micros:
			v = int64(x)
		}
		return strconv.FormatFloat(float64(v)/1e6, 'f', 4, 64)
	},
	"other": func(lang string) string { return map[string]string{"en": "es", "es": "en"}[lang] },
}
