// Order status: answers "where is my order?" from your order system, and starts returns. Every
// call checks that the order belongs to the person asking (the email or phone on the order), so
// an order number alone never reveals someone else's order.
import { defineAgent, defineTool } from "@zavudev/functions";

const ORDERS_API_URL = process.env.ORDERS_API_URL!;
const ORDERS_API_TOKEN = process.env.ORDERS_API_TOKEN!;

defineAgent({
  senderId: process.env.SENDER_ID!,
  name: "Order status",
  provider: "zavu",
  model: "gpt-4o-mini",
  prompt: [
    "You help customers with their orders: where an order is, when it arrives, and returns.",
    "Ask for the order number and the email or phone number used for the order before looking anything up.",
    "Use get_order_status for the status, and track_shipment once an order has shipped. Give dates in the customer's terms (\"Thursday, May 14\").",
    "Start a return with start_return only after the customer confirms which items and why. Explain what happens next from the tool's answer.",
    "If a tool says the order does not match, ask the customer to check the details; never hint at what the right ones are.",
  ].join("\n"),
});

type Order = {
  number: string;
  email: string;
  phone?: string;
  status: "pending" | "paid" | "shipped" | "delivered" | "cancelled";
  placedAt: string;
  estimatedDelivery?: string;
  carrier?: string;
  trackingNumber?: string;
  items: { sku: string; name: string; quantity: number }[];
};

async function ordersApi(path: string, init?: RequestInit): Promise<Response> {
  return fetch(`${ORDERS_API_URL}${path}`, {
    ...init,
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${ORDERS_API_TOKEN}`, ...init?.headers },
  });
}

// findOrder reads an order and checks that it is the customer's.
async function findOrder(orderNumber: string, contact: string): Promise<Order | null> {
  const res = await ordersApi(`/orders/${encodeURIComponent(orderNumber)}`);
  if (res.status === 404) {
    return null;
  }
  if (!res.ok) {
    throw new Error(`the order system answered HTTP ${res.status}`);
  }
  const order = (await res.json()) as Order;
  const given = contact.trim().toLowerCase();
  return given === order.email.toLowerCase() || given === order.phone ? order : null;
}

const orderParameters = {
  type: "object",
  properties: {
    orderNumber: { type: "string", description: "The order number, e.g. A-1042." },
    contact: { type: "string", description: "The email address or phone number (E.164) on the order." },
  },
  required: ["orderNumber", "contact"],
} as const;

defineTool({
  name: "get_order_status",
  description: "Look up an order's status, items and estimated delivery date.",
  parameters: orderParameters,
  handler: async ({ orderNumber, contact }: { orderNumber: string; contact: string }) => {
    const order = await findOrder(orderNumber, contact);
    if (!order) {
      return { found: false, message: "No order matches that number and contact." };
    }
    return {
      found: true,
      status: order.status,
      placedAt: order.placedAt,
      estimatedDelivery: order.estimatedDelivery ?? null,
      items: order.items.map((i) => `${i.quantity} × ${i.name}`),
    };
  },
});

defineTool({
  name: "track_shipment",
  description: "Get the carrier and tracking number of a shipped order, to tell the customer where the parcel is.",
  parameters: orderParameters,
  handler: async ({ orderNumber, contact }: { orderNumber: string; contact: string }) => {
    const order = await findOrder(orderNumber, contact);
    if (!order) {
      return { found: false, message: "No order matches that number and contact." };
    }
    if (!order.trackingNumber) {
      return { found: true, shipped: false, status: order.status };
    }
    return { found: true, shipped: true, carrier: order.carrier ?? null, trackingNumber: order.trackingNumber };
  },
});

defineTool({
  name: "start_return",
  description:
    "Start a return for items of a delivered order, once the customer has confirmed the items and the reason. " +
    "Returns the return's id and the instructions to give the customer.",
  parameters: {
    type: "object",
    properties: {
      ...orderParameters.properties,
      skus: { type: "array", items: { type: "string" }, description: "The SKUs of the items to return." },
      reason: { type: "string", description: "Why the customer returns them, in their words." },
    },
    required: ["orderNumber", "contact", "skus", "reason"],
  },
  handler: async (args: { orderNumber: string; contact: string; skus: string[]; reason: string }) => {
    const order = await findOrder(args.orderNumber, args.contact);
    if (!order) {
      return { started: false, message: "No order matches that number and contact." };
    }
    if (order.status !== "delivered") {
      return { started: false, message: `The order is ${order.status}; only delivered orders can be returned.` };
    }
    const res = await ordersApi(`/orders/${encodeURIComponent(order.number)}/returns`, {
      method: "POST",
      body: JSON.stringify({ skus: args.skus, reason: args.reason }),
    });
    if (!res.ok) {
      throw new Error(`the order system refused the return: HTTP ${res.status}`);
    }
    const created = (await res.json()) as { id: string; instructions: string };
    return { started: true, returnId: created.id, instructions: created.instructions };
  },
});
