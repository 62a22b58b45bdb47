// Support desk: answers from your help center, and hands what it cannot solve to your team as a
// ticket. The two tools call plain HTTP endpoints: point them at your help center and help desk
// (or adapt the request and response shapes below to theirs).
import { defineAgent, defineTool } from "@zavudev/functions";

const HELP_CENTER_SEARCH_URL = process.env.HELP_CENTER_SEARCH_URL!;
const HELPDESK_API_URL = process.env.HELPDESK_API_URL!;
const HELPDESK_API_TOKEN = process.env.HELPDESK_API_TOKEN!;

defineAgent({
  senderId: process.env.SENDER_ID!,
  name: "Support desk",
  // "zavu" is the installation's model; use "openai", "anthropic", "google" or "mistral" with
  // your own key instead.
  provider: "zavu",
  model: "gpt-4o-mini",
  prompt: [
    "You are the customer support assistant of our company. Answer briefly, kindly and in the customer's language.",
    "Before answering a question about our product, policies or an error, call search_help_center and base your answer on the articles it returns; link the most relevant one.",
    "Never invent policies, prices or dates. If the articles do not answer the question, say so.",
    "When you cannot solve the problem, or the customer asks for a person, call create_ticket with a clear summary, then tell the customer a teammate will follow up and give them the ticket number.",
  ].join("\n"),
});

type Article = { title: string; url: string; snippet: string };

defineTool({
  name: "search_help_center",
  description:
    "Search the help center for articles answering a customer's question. Call it before answering " +
    "any question about the product, billing, accounts or policies.",
  parameters: {
    type: "object",
    properties: {
      query: { type: "string", description: "The customer's question, rephrased as a search query." },
    },
    required: ["query"],
  },
  handler: async ({ query }: { query: string }) => {
    const url = new URL(HELP_CENTER_SEARCH_URL);
    url.searchParams.set("q", query);
    const res = await fetch(url);
    if (!res.ok) {
      throw new Error(`help center search answered HTTP ${res.status}`);
    }
    const { results } = (await res.json()) as { results: Article[] };
    // Three articles are plenty for the model, and keep the prompt small.
    return { articles: results.slice(0, 3) };
  },
});

defineTool({
  name: "create_ticket",
  description:
    "Open a ticket for the support team when the help center does not solve the problem or the " +
    "customer asks for a person. Returns the ticket number to give the customer.",
  parameters: {
    type: "object",
    properties: {
      subject: { type: "string", description: "One line: what the problem is." },
      description: { type: "string", description: "What the customer said, what was tried, and what they expect." },
      priority: { type: "string", description: "low, normal or urgent (urgent only when the customer cannot work at all)." },
      customerContact: { type: "string", description: "How to reach the customer: phone number or email." },
    },
    required: ["subject", "description", "customerContact"],
  },
  handler: async (args: { subject: string; description: string; priority?: string; customerContact: string }) => {
    const res = await fetch(`${HELPDESK_API_URL}/tickets`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${HELPDESK_API_TOKEN}` },
      body: JSON.stringify({
        subject: args.subject,
        description: args.description,
        priority: args.priority ?? "normal",
        requester: args.customerContact,
        source: "ai-agent",
      }),
    });
    if (!res.ok) {
      throw new Error(`the help desk answered HTTP ${res.status}`);
    }
    const ticket = (await res.json()) as { id: string };
    return { ticketNumber: ticket.id };
  },
});
