// Lead qualification: a friendly first conversation with every inbound lead. It asks the four
// questions of BANT (need, budget, timeline, authority) one at a time, saves the answers to your
// CRM, and texts a sales rep when a lead is ready for a call.
import { defineAgent, defineTool } from "@zavudev/functions";
import Zavudev from "@zavudev/sdk";

const CRM_WEBHOOK_URL = process.env.CRM_WEBHOOK_URL!;
const SALES_ALERT_PHONE = process.env.SALES_ALERT_PHONE!;

// The function's own API key (ZAVU_API_KEY) is provisioned with it.
const zavu = new Zavudev({ apiKey: process.env.ZAVU_API_KEY });

defineAgent({
  senderId: process.env.SENDER_ID!,
  name: "Lead qualification",
  provider: "zavu",
  model: "gpt-4o-mini",
  prompt: [
    "You are the first contact for people interested in our product. Be curious and helpful, never pushy.",
    "Learn, one question at a time and in natural words: what problem they want to solve (need), roughly what they can spend (budget), when they want to start (timeline), and who decides (authority). Also ask their name, company and email.",
    "Answer their questions about the product briefly; if you do not know, say a specialist will follow up.",
    "Once you know the four answers, or the lead wants to stop, call save_lead. If the score it returns is hot, call notify_sales and tell the lead a specialist will reach out today.",
  ].join("\n"),
});

type Lead = {
  name: string;
  company?: string;
  email?: string;
  phone?: string;
  need: string;
  budget?: string;
  timeline?: string;
  authority?: string;
};

// score ranks a lead by how much of BANT is known and how soon it buys.
function score(lead: Lead): "hot" | "warm" | "cold" {
  const known = [lead.need, lead.budget, lead.timeline, lead.authority].filter((v) => v && v.trim() !== "").length;
  const soon = /\b(now|asap|this (week|month)|immediately|today|\d+ (days|weeks))\b/i.test(lead.timeline ?? "");
  if (known === 4 && soon) return "hot";
  if (known >= 3) return "warm";
  return "cold";
}

defineTool({
  name: "save_lead",
  description:
    "Save the lead and its qualification answers to the CRM. Returns the lead's score: hot, warm or cold.",
  parameters: {
    type: "object",
    properties: {
      name: { type: "string", description: "The lead's name." },
      company: { type: "string", description: "Their company, if any." },
      email: { type: "string", description: "Their email address." },
      phone: { type: "string", description: "Their phone number in E.164, if they gave one." },
      need: { type: "string", description: "The problem they want to solve, in their words." },
      budget: { type: "string", description: "What they can spend, as they said it." },
      timeline: { type: "string", description: "When they want to start, as they said it." },
      authority: { type: "string", description: "Who decides: them, or who else." },
    },
    required: ["name", "need"],
  },
  handler: async (lead: Lead) => {
    const rating = score(lead);
    const res = await fetch(CRM_WEBHOOK_URL, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ ...lead, score: rating, source: "ai-agent" }),
    });
    if (!res.ok) {
      throw new Error(`the CRM answered HTTP ${res.status}`);
    }
    return { saved: true, score: rating };
  },
});

defineTool({
  name: "notify_sales",
  description: "Text the sales rep about a hot lead so they call them today. Call it only after save_lead returned hot.",
  parameters: {
    type: "object",
    properties: {
      name: { type: "string", description: "The lead's name." },
      company: { type: "string", description: "Their company, if any." },
      contact: { type: "string", description: "Their phone number or email." },
      summary: { type: "string", description: "Two lines: their need, budget, timeline and who decides." },
    },
    required: ["name", "contact", "summary"],
  },
  handler: async (args: { name: string; company?: string; contact: string; summary: string }) => {
    const who = args.company ? `${args.name} (${args.company})` : args.name;
    await zavu.messages.send({
      to: SALES_ALERT_PHONE,
      text: `Hot lead: ${who}, ${args.contact}.\n${args.summary}`,
    });
    return { notified: true };
  },
});
