package console

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

func init() {
	register([]string{"senders"}, []viewRoute{
		{pattern: "GET " + Path + "senders", handler: func(h *Handler) handlerFunc { return h.senders }},
	}, senderTexts)
}

var senderTexts = map[string]map[string]string{
	"en": {
		"nav.senders":                     "Senders",
		"senders.none":                    "The project has no sender.",
		"senders.intro":                   "The project's senders as the cluster sees them now: the channels they send on, whether they are ready, their webhook and the Providers their messages go through. No secret is shown.",
		"senders.displayName":             "Display name",
		"senders.transport":               "Transport",
		"senders.default":                 "Default sender",
		"senders.ready":                   "Readiness",
		"senders.activity":                "Last 24 h",
		"senders.activityN":               "%d sent, %d received",
		"senders.channels":                "Channels",
		"senders.noChannel":               "No channel is configured.",
		"senders.address":                 "Address",
		"senders.state":                   "State",
		"senders.provider":                "Provider named",
		"senders.providerDefault":         "the default",
		"senders.ch.on":                   "On",
		"senders.ch.pending":              "Enabled, not on yet",
		"senders.ch.off":                  "Configured, off",
		"senders.webhook":                 "Webhook",
		"senders.noWebhook":               "None",
		"senders.wh.on":                   "Enabled",
		"senders.wh.paused":               "Paused (inactive)",
		"senders.wh.disabled":             "Disabled since %s",
		"senders.wh.events":               "Events",
		"senders.wh.allEvents":            "all",
		"senders.wh.signature":            "signature",
		"senders.routes":                  "Routes",
		"senders.noRoute":                 "No route: the sender's messages are simulated, or no channel is on.",
		"senders.testMode":                "Test keys send every message through the sandbox, whatever the routes say; live keys follow them.",
		"senders.allPrefixes":             "every destination",
		"senders.source":                  "From %s",
		"senders.src.route":               "the sender's routes",
		"senders.src.channel":             "the channel's Provider",
		"senders.src.projectPolicy":       "the project's routing policy",
		"senders.src.projectDefault":      "the project's default Provider",
		"senders.src.installationPolicy":  "the installation's routing policy",
		"senders.src.installationDefault": "the installation's default Provider",
		"senders.providers":               "Providers",
		"senders.providersIntro":          "The project's own Providers, and the installation's its senders' routes use.",
		"senders.noProvider":              "No Provider is in the project or on its senders' routes.",
		"senders.provider.name":           "Provider",
		"senders.type":                    "Type",
		"senders.serves":                  "Serves",
		"senders.agents":                  "agents' models",
		"senders.circuit":                 "Circuit breaker",
		"senders.installation":            "the installation's",
		"senders.isDefault":               "default",
		"senders.state.true":              "Ready",
		"senders.state.false":             "Not ready",
		"senders.state.unknown":           "Being checked",
		"senders.circuit.closed":          "Closed",
		"senders.circuit.open":            "Open",
		"senders.circuit.halfOpen":        "Half-open (probing)",
	},
	"es": {
		"nav.senders":                     "Remitentes",
		"senders.none":                    "El proyecto no tiene remitentes.",
		"senders.intro":                   "Los remitentes del proyecto tal como el clúster los ve ahora: los canales por los que envían, si están listos, su webhook y los proveedores por los que salen sus mensajes. No se muestra ningún secreto.",
		"senders.displayName":             "Nombre visible",
		"senders.transport":               "Transporte",
		"senders.default":                 "Remitente predeterminado",
		"senders.ready":                   "Disponibilidad",
		"senders.activity":                "Últimas 24 h",
		"senders.activityN":               "%d enviados, %d recibidos",
		"senders.channels":                "Canales",
		"senders.noChannel":               "No hay ningún canal configurado.",
		"senders.address":                 "Dirección",
		"senders.state":                   "Situación",
		"senders.provider":                "Proveedor indicado",
		"senders.providerDefault":         "el predeterminado",
		"senders.ch.on":                   "Activo",
		"senders.ch.pending":              "Habilitado, aún no activo",
		"senders.ch.off":                  "Configurado, desactivado",
		"senders.webhook":                 "Webhook",
		"senders.noWebhook":               "Ninguno",
		"senders.wh.on":                   "Activo",
		"senders.wh.paused":               "En pausa (inactivo)",
		"senders.wh.disabled":             "Desactivado desde %s",
		"senders.wh.events":               "Eventos",
		"senders.wh.allEvents":            "todos",
		"senders.wh.signature":            "firma",
		"senders.routes":                  "Rutas",
		"senders.noRoute":                 "Sin rutas: los mensajes del remitente se simulan, o no hay ningún canal activo.",
		"senders.testMode":                "Las claves de prueba envían todos los mensajes por el sandbox, digan lo que digan las rutas; las claves reales las siguen.",
		"senders.allPrefixes":             "todos los destinos",
		"senders.source":                  "Según %s",
		"senders.src.route":               "las rutas del remitente",
		"senders.src.channel":             "el proveedor del canal",
		"senders.src.projectPolicy":       "la política de enrutamiento del proyecto",
		"senders.src.projectDefault":      "el proveedor predeterminado del proyecto",
		"senders.src.installationPolicy":  "la política de enrutamiento de la instalación",
		"senders.src.installationDefault": "el proveedor predeterminado de la instalación",
		"senders.providers":               "Proveedores",
		"senders.providersIntro":          "Los proveedores propios del proyecto y los de la instalación que usan las rutas de sus remitentes.",
		"senders.noProvider":              "No hay proveedores en el proyecto ni en las rutas de sus remitentes.",
		"senders.provider.name":           "Proveedor",
		"senders.type":                    "Tipo",
		"senders.serves":                  "Atiende",
		"senders.agents":                  "modelos de agentes",
		"senders.circuit":                 "Cortacircuitos",
		"senders.installation":            "de la instalación",
		"senders.isDefault":               "predeterminado",
		"senders.state.true":              "Listo",
		"senders.state.false":             "No listo",
		"senders.state.unknown":           "En comprobación",
		"senders.circuit.closed":          "Cerrado",
		"senders.circuit.open":            "Abierto",
		"senders.circuit.halfOpen":        "Semiabierto (probando)",
	},
}

// condition is a status condition as the pages show it: its state (true, false, unknown: absent
// or not yet computed for the object's latest generation), and why.
type condition struct {
	State, Reason, Message string
}

func conditionOf(conds []metav1.Condition, typ string, generation int64) condition {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return condition{State: "unknown"}
	}
	out := condition{State: strings.ToLower(string(c.Status)), Reason: c.Reason, Message: c.Message}
	if generation != 0 && c.ObservedGeneration < generation {
		out.State = "unknown" // the latest change is not checked yet
	}
	return out
}

// Class is the status style of the condition's state.
func (c condition) Class() string {
	switch c.State {
	case "true":
		return "s-delivered"
	case "false":
		return "s-failed"
	}
	return "s-queued"
}

type sendersData struct {
	Senders   []senderRow
	Providers []providerRow
}

type senderRow struct {
	Name, DisplayName, Transport string
	Default                      bool
	Ready                        condition
	Activity                     *v1alpha1.SenderActivity
	Channels                     []channelRow
	Webhook                      *webhookRow
	Routes                       []routeRow
}

type channelRow struct {
	Channel, Address, State, Provider string
}

type webhookRow struct {
	URL, Signature string
	Events         []string
	Paused         bool
	// Disabled is the WebhookEnabled condition that disabled it, if it did, and Since when.
	Disabled *metav1.Condition
	Since    string
}

type routeRow struct {
	Channel, Strategy, Source, Error string
	Prefixes                         []string
	Providers                        []routeProvider
}

// routeProvider is a Provider of a route: "namespace/name", and its row's id below when shown.
type routeProvider struct {
	Name, Anchor string
}

type providerRow struct {
	Namespace, Name, Anchor, Type string
	Serves                        []v1alpha1.Channel
	Model                         bool
	Installation, Default         bool
	Ready, Circuit                condition
	CircuitState                  string
}

// CircuitClass is the status style of the circuit breaker's state.
func (p providerRow) CircuitClass() string {
	switch p.CircuitState {
	case "closed":
		return "s-delivered"
	case "open":
		return "s-failed"
	}
	return "s-queued"
}

// senders shows the project's Senders: their channels, readiness, webhook and resolved routes,
// and the Providers they can use (the project's, and the installation's their routes name),
// each with its readiness and circuit breaker. Everything comes from the informers' cache (no
// Postgres); no secret is shown. Any key may see it, as any key may read its senders through
// the API.
func (h *Handler) senders(w http.ResponseWriter, r *http.Request, v *view) {
	var d sendersData
	if v.project == "" { // an operator of an installation without projects: nothing to list
		h.render(w, r, v, http.StatusOK, "senders", t(v.lang, "nav.senders"), d)
		return
	}
	ctx := r.Context()
	var senders v1alpha1.SenderList
	if err := h.o.Reader.List(ctx, &senders, client.InNamespace(v.project)); err != nil {
		h.internal(w, r, v.lang, fmt.Errorf("list senders: %w", err))
		return
	}
	var own v1alpha1.ProviderList
	if err := h.o.Reader.List(ctx, &own, client.InNamespace(v.project)); err != nil {
		h.internal(w, r, v.lang, fmt.Errorf("list providers: %w", err))
		return
	}
	items := senders.Items
	slices.SortFunc(items, func(a, b v1alpha1.Sender) int { // the default first, then by name
		if a.Status.IsDefault != b.Status.IsDefault {
			if a.Status.IsDefault {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	providers := map[string]*v1alpha1.Provider{}
	for i := range own.Items {
		p := &own.Items[i]
		providers[p.Namespace+"/"+p.Name] = p
	}
	for i := range items {
		s := &items[i]
		row := senderRow{Name: s.Name, DisplayName: s.Spec.DisplayName, Transport: string(s.Spec.Transport), Default: s.Status.IsDefault,
			Ready: conditionOf(s.Status.Conditions, v1alpha1.ConditionReady, s.Generation), Activity: s.Status.Activity,
			Channels: senderChannels(s), Webhook: senderWebhook(s)}
		if row.Transport == "" {
			row.Transport = string(v1alpha1.TransportProviders)
		}
		for _, rt := range s.Status.Routes {
			rr := routeRow{Channel: string(rt.Channel), Strategy: string(rt.Strategy), Source: rt.Source, Error: rt.Error, Prefixes: rt.Prefixes}
			for _, name := range rt.Providers {
				rr.Providers = append(rr.Providers, routeProvider{Name: name})
				if _, seen := providers[name]; seen {
					continue
				}
				// The installation's Provider (or one gone since the route was resolved): from
				// the cache too.
				providers[name] = nil
				ns, n, ok := strings.Cut(name, "/")
				if !ok {
					continue
				}
				var p v1alpha1.Provider
				err := h.o.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, &p)
				if apierrors.IsNotFound(err) {
					continue
				}
				if err != nil {
					h.internal(w, r, v.lang, fmt.Errorf("read provider %s: %w", name, err))
					return
				}
				providers[name] = &p
			}
			row.Routes = append(row.Routes, rr)
		}
		d.Senders = append(d.Senders, row)
	}
	for i := range d.Senders {
		for j := range d.Senders[i].Routes {
			for k, rp := range d.Senders[i].Routes[j].Providers {
				if providers[rp.Name] != nil {
					d.Senders[i].Routes[j].Providers[k].Anchor = providerAnchor(rp.Name)
				}
			}
		}
	}
	for name, p := range providers {
		if p == nil {
			continue
		}
		pr := providerRow{Namespace: p.Namespace, Name: p.Name, Anchor: providerAnchor(name), Type: string(p.Spec.Type),
			Serves: p.Spec.Type.Channels(), Model: p.Spec.Type.IsModel(), Installation: p.Namespace != v.project, Default: p.Spec.Default,
			Ready:        conditionOf(p.Status.Conditions, v1alpha1.ConditionReady, p.Generation),
			Circuit:      conditionOf(p.Status.Conditions, v1alpha1.ConditionCircuitClosed, 0),
			CircuitState: p.Status.Circuit}
		if pr.CircuitState == "" {
			pr.CircuitState = "closed" // never opened
		}
		d.Providers = append(d.Providers, pr)
	}
	slices.SortFunc(d.Providers, func(a, b providerRow) int { // the project's first, then by name
		if a.Installation != b.Installation {
			if a.Installation {
				return 1
			}
			return -1
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	h.render(w, r, v, http.StatusOK, "senders", t(v.lang, "nav.senders"), d)
}

// senderChannels are the sender's channels: those on (status.channels), those its spec enables
// that are not on yet (the transport does not carry them, or the controller has not caught
// up), and those configured but switched off.
func senderChannels(s *v1alpha1.Sender) []channelRow {
	var out []channelRow
	active := s.Spec.ActiveChannels()
	for _, c := range v1alpha1.AllChannels {
		row := channelRow{Channel: string(c), Address: s.Address(c), Provider: s.ProviderName(c)}
		switch {
		case slices.Contains(s.Status.Channels, c):
			row.State = "on"
		case slices.Contains(active, c):
			row.State = "pending"
		case row.Address != "":
			row.State = "off"
		default:
			continue
		}
		out = append(out, row)
	}
	return out
}

// senderWebhook is the sender's webhook: where it goes and whether it is delivered to. Its
// signing secret is never shown, nor the Secret's name.
func senderWebhook(s *v1alpha1.Sender) *webhookRow {
	wh := s.Spec.Webhook
	if wh == nil {
		return nil
	}
	out := &webhookRow{URL: wh.URL, Signature: string(wh.SignatureVersion), Paused: wh.Active != nil && !*wh.Active,
		Disabled: v1alpha1.WebhookDisabled(s.Status.Conditions)}
	if out.Disabled != nil {
		out.Since = out.Disabled.LastTransitionTime.UTC().Format(time.DateTime)
	}
	for _, e := range wh.Events {
		out.Events = append(out.Events, string(e))
	}
	return out
}

// providerAnchor is the id of a Provider's row ("namespace/name" made an HTML id).
func providerAnchor(name string) string {
	return "provider-" + strings.ReplaceAll(name, "/", "--")
}
