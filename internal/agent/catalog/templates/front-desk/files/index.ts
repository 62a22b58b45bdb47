// Front desk booking: a receptionist for phone calls and messages. It finds free slots in your
// scheduling system, books, moves and cancels appointments, and texts a confirmation after each
// booking. Callers who ask for a person are transferred to FRONT_DESK_PHONE.
import { defineAgent, defineTool } from "@zavudev/functions";
import Zavudev from "@zavudev/sdk";

const BOOKING_API_URL = process.env.BOOKING_API_URL!;
const BOOKING_API_TOKEN = process.env.BOOKING_API_TOKEN!;
const TIMEZONE = process.env.BUSINESS_TIMEZONE ?? "UTC";

// The function's own API key (ZAVU_API_KEY) is provisioned with it.
const zavu = new Zavudev({ apiKey: process.env.ZAVU_API_KEY });

defineAgent({
  senderId: process.env.SENDER_ID!,
  name: "Front desk",
  provider: "zavu",
  model: "gpt-4o-mini",
  prompt: [
    "You are the front desk of our business, on the phone and on messages. Be warm and brief: on calls, one or two sentences at a time.",
    `Times are in ${TIMEZONE}. Always confirm the day, date and time back to the caller before booking.`,
    "To book: ask which service, find slots with check_availability, offer at most three, then call book_appointment with the caller's name and phone number.",
    "To move or cancel: ask for the booking reference or the phone number used, confirm which appointment, then call cancel_appointment (and book the new slot when moving).",
    "Do not give medical, legal or pricing advice beyond what the tools return. If the caller wants a person, say you are transferring them.",
  ].join("\n"),
  voice: {
    enabled: true,
    greeting: "Thanks for calling! I can book, move or cancel an appointment. How can I help?",
    language: "en-US",
    ttsVoiceId: "en-US-Chirp3-HD-Aoede",
    interruptible: true,
    maxCallDurationMinutes: 15,
    maxIdleSeconds: 20,
    transferPhoneNumber: process.env.FRONT_DESK_PHONE,
  },
});

async function bookingApi(path: string, init?: RequestInit): Promise<Response> {
  const res = await fetch(`${BOOKING_API_URL}${path}`, {
    ...init,
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${BOOKING_API_TOKEN}`, ...init?.headers },
  });
  if (!res.ok && res.status !== 404 && res.status !== 409) {
    throw new Error(`the scheduling system answered HTTP ${res.status}`);
  }
  return res;
}

// spoken renders an ISO time the way a receptionist says it: "Thursday, May 14, 3:30 PM".
function spoken(iso: string): string {
  return new Date(iso).toLocaleString("en-US", {
    timeZone: TIMEZONE,
    weekday: "long",
    month: "long",
    day: "numeric",
    hour: "numeric",
    minute: "2-digit",
  });
}

defineTool({
  name: "check_availability",
  description: "Find free appointment slots for a service on a day. Call it before offering any time.",
  parameters: {
    type: "object",
    properties: {
      service: { type: "string", description: "The service asked for, e.g. haircut, cleaning, consultation." },
      date: { type: "string", description: "The day, as YYYY-MM-DD in the business's time zone." },
    },
    required: ["service", "date"],
  },
  handler: async ({ service, date }: { service: string; date: string }) => {
    const q = new URLSearchParams({ service, date, timeZone: TIMEZONE });
    const res = await bookingApi(`/availability?${q}`);
    if (res.status === 404) {
      return { available: false, message: `We do not offer "${service}".` };
    }
    const { slots } = (await res.json()) as { slots: { start: string; staff?: string }[] };
    return {
      available: slots.length > 0,
      slots: slots.slice(0, 6).map((s) => ({ start: s.start, spoken: spoken(s.start), staff: s.staff ?? null })),
    };
  },
});

defineTool({
  name: "book_appointment",
  description:
    "Book a slot returned by check_availability, once the caller has confirmed it. Texts them the confirmation.",
  parameters: {
    type: "object",
    properties: {
      service: { type: "string", description: "The service, as given to check_availability." },
      start: { type: "string", description: "The slot's start, exactly as check_availability returned it." },
      name: { type: "string", description: "The customer's full name." },
      phone: { type: "string", description: "The customer's mobile number in E.164, e.g. +14155550123." },
    },
    required: ["service", "start", "name", "phone"],
  },
  handler: async (args: { service: string; start: string; name: string; phone: string }) => {
    const res = await bookingApi("/bookings", {
      method: "POST",
      body: JSON.stringify({ service: args.service, start: args.start, customer: { name: args.name, phone: args.phone } }),
    });
    if (res.status === 409) {
      return { booked: false, message: "That slot was just taken; check availability again." };
    }
    const booking = (await res.json()) as { id: string; start: string };
    await zavu.messages.send({
      to: args.phone,
      text: `Hi ${args.name}, your ${args.service} is booked for ${spoken(booking.start)}. Reference: ${booking.id}. Reply to this message to change it.`,
    });
    return { booked: true, reference: booking.id, when: spoken(booking.start) };
  },
});

defineTool({
  name: "cancel_appointment",
  description: "Cancel an appointment by its reference, once the customer has confirmed which one.",
  parameters: {
    type: "object",
    properties: {
      reference: { type: "string", description: "The booking reference given when it was booked." },
    },
    required: ["reference"],
  },
  handler: async ({ reference }: { reference: string }) => {
    const res = await bookingApi(`/bookings/${encodeURIComponent(reference)}`, { method: "DELETE" });
    if (res.status === 404) {
      return { cancelled: false, message: "No appointment has that reference." };
    }
    return { cancelled: true };
  },
});
