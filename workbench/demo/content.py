"""What the demo memory file holds: three agents' conversations, notes, facts and schedules.

Hand-written so that the first thing a new user opens reads like a real agent's memory:
a billing-support bot, a research assistant planning a trek, an on-call ops agent. Every
time is fixed relative to :data:`ANCHOR` (the demo's "now"), so the file is the same on
every run. :mod:`workbench.demo.build` turns these structures into engine calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

ANCHOR = datetime(2026, 11, 20, 17, 0, tzinfo=UTC)
"""The demo's "now": a Friday afternoon; everything happened in the days before."""

SUPPORT = "support-bot"
RESEARCH = "research-assistant"
OPS = "ops-agent"
AGENTS = (SUPPORT, RESEARCH, OPS)

SALIENT = 0.9
"""Importance of the facts an agent must never lose (an allergy, a deploy rule)."""


def at(day: int, hour: int, minute: int = 0) -> datetime:
    """A moment in November 2026, UTC (the demo's month)."""
    return datetime(2026, 11, day, hour, minute, tzinfo=UTC)


# -- the steps of a session's script -------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    """One function call of an assistant turn and the result its tool returned."""

    name: str
    arguments: dict[str, Any]
    result: Any  # JSON-able; stored as the tool message's JSON text


@dataclass(frozen=True)
class ToolStep:
    """An assistant turn that calls tools, followed by one tool message per call."""

    calls: tuple[ToolCall, ...]
    text: str | None = None  # what the assistant says beside the calls, if anything


@dataclass(frozen=True)
class Pause:
    """Time passing in a session with nothing said (the user went away and came back)."""

    minutes: float


@dataclass(frozen=True)
class Scratchpad:
    """The agent rewrites the session's scratchpad at this point."""

    items: tuple[str, ...]


@dataclass(frozen=True)
class Compact:
    """The session is compacted here: its history so far becomes an archive note."""


@dataclass(frozen=True)
class Summarize:
    """A rolling summary is taken here, against a context window of ``token_budget``."""

    token_budget: int


@dataclass(frozen=True)
class Recall:
    """The agent searches its memory; ``judged`` grades results whose text contains a phrase.

    ``scope`` is "session" (this conversation) or "namespace" (everything the agent has).
    """

    query: str
    scope: str = "session"
    judged: tuple[tuple[str, int], ...] = ()


Step = dict[str, Any] | ToolStep | Pause | Scratchpad | Compact | Summarize | Recall


@dataclass(frozen=True)
class Session:
    """One conversation of one agent, as a script that starts at ``start``."""

    session_id: str
    agent: str
    start: datetime
    script: tuple[Step, ...]


def _message(role: str, text: str, importance: float | None,
             tags: tuple[str, ...], name: str | None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "content": text}
    if name:
        message["name"] = name
    if importance is not None:
        message["importance"] = importance
    if tags:
        message["metadata"] = {"tags": list(tags)}
    return message


def user(text: str, *, importance: float | None = None, tags: tuple[str, ...] = (),
         name: str | None = None) -> dict[str, Any]:
    """A user turn."""
    return _message("user", text, importance, tags, name)


def assistant(text: str, *, importance: float | None = None,
              tags: tuple[str, ...] = ()) -> dict[str, Any]:
    """An assistant turn in words."""
    return _message("assistant", text, importance, tags, None)


def system(text: str, *, importance: float | None = None) -> dict[str, Any]:
    """A system message (the agent's instructions, or an event it is told of)."""
    return _message("system", text, importance, (), None)


def tool(name: str, arguments: dict[str, Any], result: Any, *,
         text: str | None = None) -> ToolStep:
    """An assistant turn calling one tool, with the tool's result."""
    return ToolStep((ToolCall(name, arguments, result),), text)


def tools(*calls: ToolCall, text: str | None = None) -> ToolStep:
    """An assistant turn calling several tools at once (parallel tool calls)."""
    return ToolStep(calls, text)


# -- support-bot: customer support for Ledgerly, a subscription-billing SaaS ----------------

SUPPORT_SYSTEM = system(
    "You are the support assistant for Ledgerly, a subscription-billing platform. You can "
    "look up customers, invoices, payments and webhooks, and issue refunds of up to $5,000 "
    "without approval. Confirm amounts before acting, and be brief.")

ACME_DOUBLE_CHARGE = Session("support-acme-double-charge", SUPPORT, at(11, 9, 12), (
    SUPPORT_SYSTEM,
    user("Hi, we were charged twice for our November invoice. Our card statement shows two "
         "payments of $4,860.00 on Nov 1. The account is Acme Corp.",
         name="priya", tags=("billing", "refund")),
    tool("lookup_customer", {"query": "Acme Corp"}, {
        "customer_id": "cus_8YqL2", "name": "Acme Corp", "plan": "Scale", "seats": 140,
        "billing_email": "ap@acme.example", "payment_method": "visa •••• 4417",
        "account_manager": "Daniel Okafor"}),
    tool("list_invoices", {"customer_id": "cus_8YqL2", "period": "2026-11"}, [
        {"invoice_id": "INV-2291", "amount_due": 4860.00, "currency": "USD",
         "status": "paid", "issued": "2026-11-01"}]),
    tool("list_payments", {"invoice_id": "INV-2291"}, [
        {"charge_id": "ch_3Pq8kA", "amount": 4860.00, "status": "succeeded",
         "created": "2026-11-01T00:02:13Z", "note": "gateway timeout, retried"},
        {"charge_id": "ch_3Pq8mB", "amount": 4860.00, "status": "succeeded",
         "created": "2026-11-01T00:04:51Z", "note": "automatic retry"}]),
    assistant("I can see it. Invoice INV-2291 ($4,860.00) was charged twice on Nov 1: the "
              "first charge at 00:02 UTC hit a gateway timeout on our side, our automatic "
              "retry at 00:04 went through too, and both succeeded. That's our error, not "
              "yours. I can refund the duplicate charge (ch_3Pq8mB) in full, $4,860.00, to "
              "the Visa ending 4417. Shall I go ahead?", tags=("billing", "refund")),
    user("Yes please. How long until it shows up on the card?", name="priya"),
    tool("issue_refund", {"charge_id": "ch_3Pq8mB", "amount": 4860.00, "reason": "duplicate"},
         {"refund_id": "re_1Nv77", "status": "pending", "amount": 4860.00,
          "expected_arrival": "2026-11-16 to 2026-11-18"}),
    assistant("Done: refund re_1Nv77 for $4,860.00 is on its way. Card refunds take 5-10 "
              "business days; Visa usually posts them within 3-5, so expect it around Nov "
              "16-18. A confirmation email is going to ap@acme.example.",
              tags=("billing", "refund")),
    user("Great. Can you make sure this doesn't happen again? I think this is the second "
         "time this year.", name="priya"),
    tool("search_tickets", {"customer_id": "cus_8YqL2", "query": "duplicate charge"}, [
        {"ticket": "SUP-1184", "opened": "2026-03-02", "status": "closed",
         "summary": "Duplicate charge on INV-1740 after gateway timeout; refunded."}]),
    tool("create_ticket", {
        "queue": "payments-engineering", "priority": "high",
        "title": "Gateway-timeout retries can double-charge (Acme Corp, 2nd time)",
        "links": ["SUP-1184", "INV-2291"]},
        {"ticket": "PAY-412", "status": "open", "assignee": "payments-team"}),
    assistant("You're right: SUP-1184 in March was the same problem. I've filed PAY-412 "
              "with payments engineering (retries after a gateway timeout can charge twice) "
              "at high priority. From now on any billing problem on your account goes "
              "straight to your account manager, Daniel Okafor.", importance=SALIENT,
              tags=("billing", "escalation")),
    user("Thanks. One more thing: can future invoices go to both ap@acme.example and me, "
         "priya@acme.example?", name="priya"),
    tool("update_billing_profile", {
        "customer_id": "cus_8YqL2",
        "invoice_recipients": ["ap@acme.example", "priya@acme.example"]},
        {"ok": True, "invoice_recipients": ["ap@acme.example", "priya@acme.example"]}),
    assistant("Done. From the December invoice on, both ap@acme.example and "
              "priya@acme.example get a copy."),
    user("Perfect, that's everything.", name="priya"),
    assistant("Thanks, Priya, and sorry again for the trouble. I'll keep an eye on PAY-412 "
              "and let you know when the fix ships."),
    Pause(minutes=60 * 23),
    Compact(),
    Pause(minutes=60 * 24 * 4 + 80),
    user("Hi again! The refund for INV-2291 showed up on our statement this morning. Thanks!",
         name="priya", tags=("refund",)),
    tool("lookup_refund", {"refund_id": "re_1Nv77"},
         {"refund_id": "re_1Nv77", "status": "succeeded", "amount": 4860.00,
          "arrived": "2026-11-16"}),
    assistant("Glad it arrived: re_1Nv77 shows as settled on our side as well."),
    user("Any news on the bug ticket?", name="priya"),
    tool("get_ticket", {"ticket": "PAY-412"},
         {"ticket": "PAY-412", "status": "in progress",
          "resolution": "idempotency key on every gateway retry", "target_release":
          "2026-11-24"}),
    assistant("PAY-412 is in progress: every gateway retry will carry an idempotency key, so a "
              "retry can never create a second charge. It's planned for the Nov 24 release; "
              "I'll confirm once it's live."),
))

SEAT_DOWNGRADE = Session("support-seat-downgrade", SUPPORT, at(14, 15, 40), (
    SUPPORT_SYSTEM,
    user("We're a design studio on the Team plan with 25 seats. Seven people left after a "
         "project ended; can we go down to 18 seats now, or are we stuck until renewal?",
         name="tomas", tags=("billing", "seats")),
    tool("get_subscription", {"customer": "Brightline Studio"}, {
        "customer_id": "cus_Q2mT9", "plan": "Team", "interval": "monthly", "seats": 25,
        "price_per_seat": 24.00, "current_period": "2026-11-03 to 2026-12-03"}),
    assistant("You're on monthly billing, so you can change seats at any time. Let me work "
              "out what you'd get back."),
    tool("preview_proration", {"customer_id": "cus_Q2mT9", "seats": 18,
                               "effective": "2026-11-14"}, {
        "credit": 107.52, "currency": "USD", "days_remaining": 19, "days_in_period": 30,
        "next_invoice_estimate": 324.48}),
    assistant("Going from 25 to 18 seats today gives you a credit of $107.52 (7 seats × "
              "$24.00 × 19/30 days left in the period). It's applied to your next invoice "
              "on Dec 3, which would come to $324.48 instead of $432.00.",
              tags=("billing", "proration")),
    user("Do the seven people lose access straight away? Two of them still need to export "
         "files this week.", name="tomas"),
    assistant("Only once you remove them. Lowering the seat count doesn't remove anyone by "
              "itself: you choose which members to deactivate, and until then they keep "
              "access. If you reduce to 18 while 25 people are active, the change waits until "
              "you've deactivated seven members."),
    user("OK. Then set it to 18 seats effective today, and I'll remove people after the "
         "exports are done.", name="tomas"),
    tool("update_subscription", {"customer_id": "cus_Q2mT9", "seats": 18,
                                 "proration": "create_credit"}, {
        "ok": True, "seats": 18, "pending_until_active_members_at_most": 18,
        "credit_note": "CN-0388", "credit": 107.52}),
    assistant("Done: the subscription is set to 18 seats with credit note CN-0388 for $107.52. "
              "The change completes automatically once you're down to 18 active members."),
    user("Brilliant, thank you.", name="tomas"),
    assistant("You're welcome, Tomás. If the team grows again, adding seats is prorated the "
              "same way."),
))

WEBHOOK_FAILURES = Session("support-webhook-failures", SUPPORT, at(17, 13, 5), (
    SUPPORT_SYSTEM,
    user("Since yesterday all our webhooks fail. Our endpoint logs say 'signature "
         "verification failed' on every invoice.paid event. We did rotate the signing secret "
         "in the dashboard on Monday, if that matters.", name="wen",
         tags=("webhooks", "developer")),
    tool("list_webhook_deliveries", {"customer": "Parcelwise", "status": "failed",
                                     "limit": 3}, {
        "endpoint": "https://api.parcelwise.example/hooks/ledgerly", "failed_total": 214,
        "first_failure": "2026-11-16T14:02:11Z", "deliveries": [
            {"id": "evt_9a1", "type": "invoice.paid", "response": 401,
             "body": "signature verification failed"},
            {"id": "evt_9a4", "type": "invoice.paid", "response": 401,
             "body": "signature verification failed"},
            {"id": "evt_9b0", "type": "customer.updated", "response": 401,
             "body": "signature verification failed"}]}),
    tool("get_webhook_endpoint", {"endpoint_id": "we_77Hc"}, {
        "endpoint_id": "we_77Hc", "secret_rotated_at": "2026-11-16T13:58:40Z",
        "previous_secret_expired_at": "2026-11-16T13:58:40Z",
        "rotation_mode": "immediate"}),
    assistant("That's the cause. The secret was rotated on Nov 16 at 13:58 UTC with "
              "'expire the old secret immediately', and the failures start four minutes "
              "later: we now sign with the new secret while your server still verifies with "
              "the old one. 214 deliveries have failed since.", tags=("webhooks",)),
    user("Ugh. Can we get the old secret back so we can deploy calmly?", name="wen"),
    assistant("An expired secret can't be restored, but the fix is small: put the new secret "
              "(Dashboard → Developers → Webhooks → we_77Hc → Reveal) in your server's "
              "config and redeploy. Next time, choose 'keep the old secret for 24 hours' when "
              "rotating, and both will verify during the switch."),
    Scratchpad((
        "Parcelwise webhooks: 401s since 2026-11-16 14:02 UTC (secret rotated, old expired "
        "at once)",
        "Wait for Wen to deploy the new secret",
        "Then replay the 214 failed deliveries (oldest first)",
        "Suggest 24 h dual-secret rotation for next time",
    )),
    Pause(minutes=38),
    user("Deployed the new secret. A test event went through fine. Can you resend the ones "
         "that failed?", name="wen"),
    tool("replay_webhook_deliveries", {"endpoint_id": "we_77Hc", "status": "failed",
                                       "since": "2026-11-16T13:58:40Z", "order": "oldest"},
         {"queued": 214, "estimated_minutes": 6}),
    assistant("All 214 failed deliveries are queued for redelivery, oldest first; it takes "
              "about six minutes. Your handler should already ignore event ids it has seen, "
              "as a few of these may be retried by us too."),
    Pause(minutes=7),
    tool("list_webhook_deliveries", {"customer": "Parcelwise", "since":
                                     "2026-11-17T13:45:00Z"},
         {"delivered": 214, "failed": 0}),
    assistant("Confirmed: 214 of 214 delivered, none failed. You're fully caught up.",
              tags=("webhooks",)),
    user("Thanks, that was quick.", name="wen"),
    Scratchpad((
        "Parcelwise webhooks: fixed 2026-11-17; 214 deliveries replayed, 0 failed",
        "Docs gap: rotation dialog should default to the 24 h dual-secret mode (told product)",
    )),
    Recall("webhook signing secret rotated 401", "session",
           judged=(("rotated on nov 16", 3), ("replay", 1))),
))

VAT_INVOICE = Session("support-vat-invoice", SUPPORT, at(19, 10, 20), (
    SUPPORT_SYSTEM,
    user("Guten Tag, our finance team can't book your invoices because our VAT ID is "
         "missing. We are Kessler Maschinenbau GmbH, VAT ID DE284751936. Can you reissue "
         "invoice INV-2417?", name="jana", tags=("billing", "tax")),
    tool("validate_vat_id", {"vat_id": "DE284751936"}, {
        "valid": True, "name": "KESSLER MASCHINENBAU GMBH", "country": "DE",
        "source": "VIES"}),
    tool("update_billing_profile", {"customer_id": "cus_K3ss1", "vat_id": "DE284751936",
                                    "tax_treatment": "reverse_charge"},
         {"ok": True, "tax_treatment": "reverse_charge"}),
    assistant("The VAT ID checks out in VIES and is now on your billing profile. As a German "
              "business buying from our Irish entity, your invoices switch to the EU "
              "reverse-charge mechanism: no Irish VAT is charged and the invoice says so."),
    user("And INV-2417? It was issued on Nov 15 without the number.", name="jana"),
    tool("reissue_invoice", {"invoice_id": "INV-2417", "reason": "vat_id_added"}, {
        "voided": "INV-2417", "credit_note": "CN-0391", "new_invoice": "INV-2417-R1",
        "amount_due": 1290.00, "tax": 0.00, "pdf": "https://billing.ledgerly.example/i/"
                                                   "INV-2417-R1.pdf"}),
    assistant("INV-2417 is voided with credit note CN-0391 and reissued as INV-2417-R1 for "
              "€1,290.00 with your VAT ID and the reverse-charge note. The PDF has been "
              "emailed to your billing contact."),
    user("Vielen Dank!", name="jana"),
    assistant("Gern geschehen! Future invoices will carry the VAT ID automatically."),
))


# -- research-assistant: Sam plans a trek on the Alta Via 1 and reads papers ----------------

RESEARCH_SYSTEM = system(
    "You are Sam's research assistant. You search the web, read papers, check mountain hut "
    "availability and keep track of Sam's plans and preferences. Cite sources; say when you "
    "are unsure.")

ALTA_VIA_1 = Session("research-alta-via-1-planning", RESEARCH, at(12, 19, 30), (
    RESEARCH_SYSTEM,
    user("Lena and I want to hike the Alta Via 1 in the Dolomites next July. Where do we "
         "even start?", tags=("trip", "hiking")),
    tool("search_web", {"query": "Alta Via 1 Dolomites route overview stages"}, [
        {"title": "Alta Via 1: the classic Dolomites high route", "snippet":
         "From Lago di Braies to Belluno, about 120 km and 10-12 stages, sleeping in "
         "mountain huts (rifugi)."},
        {"title": "AV1 FAQ", "snippet": "Huts open from mid/late June to late September; "
         "book early for July and August."}]),
    assistant("The Alta Via 1 runs north to south from Lago di Braies to Belluno: about 120 km "
              "and roughly 7,000 m of ascent, usually walked in 10-12 stages, hut to hut. No "
              "technical climbing on the main line, though a few passages have cables. The "
              "huts open from late June, and July fills up first, so the first decision is "
              "your dates and how many days you have."),
    user("We have two weeks off from July 10. Neither of us has done a multi-day hut trek "
         "before, but we hike most weekends."),
    assistant("Two weeks is comfortable. I'd plan 10 walking days plus a spare day for "
              "weather, and a travel day at each end. Starting on July 11 would finish around "
              "July 21, leaving room if a thunderstorm pins you down."),
    user("One important thing: I'm allergic to peanuts. Seriously allergic, I carry an "
         "EpiPen. Huts serve dinner, right? How does that work?", importance=SALIENT,
         tags=("health", "allergy")),
    assistant("Noted, and I'll keep it in mind for everything food-related. Most rifugi serve "
              "a set half-board dinner (mezza pensione). Write the allergy in every booking "
              "request, and say it again on arrival. In Italian: \"Sono gravemente allergico "
              "alle arachidi, porto l'adrenalina.\" Peanuts are less common in Italian hut "
              "cooking than nut pastes in desserts, so ask about dolci in particular.",
              importance=SALIENT, tags=("health", "allergy")),
    user("Good. What about getting there? We're flying from Amsterdam."),
    tool("search_web", {"query": "Venice airport to Lago di Braies public transport July"}, [
        {"title": "Cortina Express", "snippet": "Direct coaches Venice Marco Polo - Cortina "
         "d'Ampezzo, about 2 h 15 min."},
        {"title": "SAD bus 442", "snippet": "Dobbiaco - Lago di Braies; in summer the road "
         "is closed to cars 9:30-16:00 and the bus needs a reservation."}]),
    assistant("Fly to Venice Marco Polo, take the Cortina Express coach to Cortina (about 2¼ "
              "hours), then a bus to Dobbiaco and bus 442 to Lago di Braies. In summer the "
              "lake road is closed to private cars during the day and the bus must be booked "
              "ahead. Many people sleep in Dobbiaco or at the lake the night before and start "
              "early."),
    user("And back from Belluno?"),
    assistant("Belluno has trains to Venice Mestre (around 2 hours, one change at Ponte nelle "
              "Alpi or Conegliano) and there are coaches to Venice airport. The last stage "
              "ends at the valley floor near La Pissa, where a bus runs into Belluno."),
    user("Let's look at the stages. Can you lay out a 10-day plan?"),
    tool("get_route_stages", {"route": "Alta Via 1", "days": 10}, [
        {"day": 1, "from": "Lago di Braies", "to": "Rifugio Biella", "km": 6.5, "up_m": 900},
        {"day": 2, "from": "Rifugio Biella", "to": "Rifugio Fanes", "km": 14, "up_m": 600},
        {"day": 3, "from": "Rifugio Fanes", "to": "Rifugio Lagazuoi", "km": 12,
         "up_m": 1000},
        {"day": 4, "from": "Rifugio Lagazuoi", "to": "Rifugio Averau", "km": 9,
         "up_m": 700},
        {"day": 5, "from": "Rifugio Averau", "to": "Rifugio Città di Fiume", "km": 14,
         "up_m": 500},
        {"day": 6, "from": "Rifugio Città di Fiume", "to": "Rifugio Coldai", "km": 8,
         "up_m": 600},
        {"day": 7, "from": "Rifugio Coldai", "to": "Rifugio Vazzoler", "km": 9, "up_m": 300},
        {"day": 8, "from": "Rifugio Vazzoler", "to": "Rifugio Carestiato", "km": 10,
         "up_m": 700},
        {"day": 9, "from": "Rifugio Carestiato", "to": "Rifugio Pian de Fontana", "km": 14,
         "up_m": 900},
        {"day": 10, "from": "Rifugio Pian de Fontana", "to": "La Pissa (bus to Belluno)",
         "km": 15, "up_m": 300}]),
    assistant("Here's a 10-day version:\n"
              "1. Lago di Braies → Rifugio Biella (6.5 km, +900 m)\n"
              "2. → Rifugio Fanes (14 km)\n"
              "3. → Rifugio Lagazuoi (12 km, +1,000 m, the big day)\n"
              "4. → Rifugio Averau (9 km)\n"
              "5. → Rifugio Città di Fiume (14 km)\n"
              "6. → Rifugio Coldai (8 km, under the Civetta)\n"
              "7. → Rifugio Vazzoler (9 km)\n"
              "8. → Rifugio Carestiato (10 km)\n"
              "9. → Rifugio Pian de Fontana (14 km)\n"
              "10. → La Pissa and the bus to Belluno (15 km, long descent)\n"
              "Distances and climbs are approximate; I'd treat them as a first draft."),
    user("Day 10 worries me. My left knee complains on long descents."),
    assistant("Then plan for it: poles from day one, and consider splitting the last stage by "
              "sleeping at Rifugio 7° Alpini or ending at Pian de Fontana and walking down the "
              "next morning fresh. The descent to the valley is over 1,500 m. I'll mark day 10 "
              "as the one to keep flexible.", tags=("health",)),
    user("Let's keep the 10-day plan but with the spare day available for the knee."),
    assistant("Agreed: 10 stages, spare day held in reserve, last stage optionally split."),
    user("How hard is the Lagazuoi day really? I read something about tunnels."),
    tool("search_web", {"query": "Rifugio Lagazuoi from Fanes via Forcella del Lago tunnels"},
         [{"title": "Lagazuoi WWI tunnels", "snippet": "The Lagazuoi galleries are First "
           "World War tunnels; a headlamp is needed. The normal AV1 route does not require "
           "them."},
          {"title": "Forcella del Lago", "snippet": "Steep scree descent, exposed in places; "
           "easier variant via Passo Tadega."}]),
    assistant("The main route doesn't go through the tunnels; they're an optional WWI "
              "gallery walk near the hut, worth it with a headlamp. The hard part is the "
              "climb to Lagazuoi at 2,752 m, and the Forcella del Lago variant has a steep "
              "scree section. With your knee I'd take the easier line via Passo Tadega."),
    user("OK. When do huts open bookings? I don't want to miss out."),
    tool("search_web", {"query": "rifugio booking opening dates summer season Dolomites"}, [
        {"title": "Booking a rifugio", "snippet": "Many huts accept requests from January "
         "or February; some only by email or phone; popular huts fill for July within "
         "weeks."}]),
    assistant("Most huts start taking summer requests in January or February, some by email "
              "or phone only, and the popular ones (Lagazuoi, Averau, Coldai) fill for July "
              "quickly. I'd prepare the requests now and send them the day each hut opens its "
              "book."),
    user("Can you check availability for the first nights anyway? Maybe some already take "
         "requests."),
    tools(ToolCall("check_hut_availability", {"hut": "Rifugio Biella", "date": "2027-07-11",
                                              "guests": 2},
                   {"hut": "Rifugio Biella", "status": "not_open",
                    "opens_bookings": "2027-01-15"}),
          ToolCall("check_hut_availability", {"hut": "Rifugio Fanes", "date": "2027-07-12",
                                              "guests": 2},
                   {"hut": "Rifugio Fanes", "status": "available",
                    "room": "4-bed dormitory", "half_board_eur": 78}),
          ToolCall("check_hut_availability", {"hut": "Rifugio Lagazuoi",
                                              "date": "2027-07-13", "guests": 2},
                   {"hut": "Rifugio Lagazuoi", "status": "waitlist",
                    "note": "private rooms full; dormitory on request"}),
          text="Checking the first three nights at once."),
    assistant("First three nights:\n"
              "- Biella (Jul 11): not open for bookings until Jan 15\n"
              "- Fanes (Jul 12): available, 4-bed dorm, €78 each with half board\n"
              "- Lagazuoi (Jul 13): private rooms full, dorm on request (waitlist)\n"
              "Want me to request Fanes now and put you on the Lagazuoi waitlist?"),
    user("Yes to both. Mention the peanut allergy."),
    tools(ToolCall("request_hut_booking", {
        "hut": "Rifugio Fanes", "date": "2027-07-12", "guests": 2, "half_board": True,
        "notes": "One guest has a severe peanut allergy (carries adrenaline)."},
        {"request_id": "FAN-20271-0712", "status": "confirmed", "deposit_eur": 40}),
          ToolCall("request_hut_booking", {
              "hut": "Rifugio Lagazuoi", "date": "2027-07-13", "guests": 2,
              "half_board": True, "waitlist": True,
              "notes": "One guest has a severe peanut allergy (carries adrenaline)."},
              {"request_id": "LAG-W-3318", "status": "waitlisted", "position": 6})),
    assistant("Fanes is confirmed for July 12 (FAN-20271-0712, €40 deposit due within a "
              "week). Lagazuoi has you on the waitlist in position 6. Both bookings mention "
              "the peanut allergy.", tags=("trip", "booking")),
    user("Nice! What's the weather like in mid-July?"),
    tool("get_climate_normals", {"place": "Cortina d'Ampezzo", "month": 7}, {
        "mean_high_c": 23, "mean_low_c": 9, "rain_days": 12,
        "thunderstorm_note": "convective storms most afternoons after 14:00"}),
    assistant("In Cortina (1,200 m) July averages highs of 23 °C and lows of 9 °C; at the huts "
              "(2,000-2,750 m) expect 5-10 °C less and frost possible at Lagazuoi. About 12 "
              "rainy days in the month, mostly afternoon thunderstorms, so the rule is: start "
              "by 7:30 and be at the hut by early afternoon."),
    user("Good to know. Lena asks whether we need cash."),
    assistant("Bring cash. Many huts now take cards, but the connection can be down and some "
              "smaller ones are cash only. For two people, €60-80 a day on top of half board "
              "covers drinks, lunches and showers; take €400-500 in cash and top up in "
              "Cortina, which the route passes near on day 4-5."),
    user("What's the total budget looking like?"),
    tool("calculate", {"expression": "2 * 10 * 85"}, {"result": 1700}),
    assistant("A rough budget for two:\n"
              "- Huts, 10 nights half board at ~€85 each: €1,700\n"
              "- Lunches, drinks, showers: ~€600\n"
              "- Transfers (coach, buses, train): ~€150\n"
              "- Night before at Braies or Dobbiaco: ~€180\n"
              "Around €2,600 excluding flights. Prices are from 2026 and will probably rise a "
              "little."),
    user("That's fine. Do we need to bring sleeping bags?"),
    assistant("No sleeping bags: huts provide blankets or duvets, but a sleeping-bag liner is "
              "compulsory in dormitories. Bring a light silk or cotton liner each, plus hut "
              "slippers if you like (most huts lend them)."),
    user("What about the via ferrata at the end? I saw 'Schiara' somewhere."),
    assistant("The Via Ferrata del Marmol on the Schiara is an optional variant near the end "
              "and needs a ferrata kit and experience. The normal route avoids it. Given it's "
              "your first hut trek and your knee, I'd skip it."),
    user("Agreed, skip it."),
    user("Also: I'm vegetarian-ish, I eat fish but not meat. Lena eats everything."),
    assistant("Noted: pescatarian for you. Huts are used to vegetarian requests; I'll add "
              "'pescatarian' next to the peanut allergy in every request."),
    user("Let's add the booking openings to my calendar so I don't forget."),
    tools(ToolCall("calendar_add", {"title": "Rifugio Biella opens bookings (AV1 night 1)",
                                    "date": "2027-01-15", "reminder_min": 60},
                   {"event_id": "cal_5521", "ok": True}),
          ToolCall("calendar_add", {"title": "Send AV1 hut requests (Averau, Coldai, "
                                             "Vazzoler)", "date": "2027-02-01",
                                    "reminder_min": 60},
                   {"event_id": "cal_5522", "ok": True})),
    assistant("Added two reminders: Jan 15 for Rifugio Biella and Feb 1 to send the remaining "
              "requests (Averau, Coldai, Vazzoler and the rest)."),
    user("How fit do we need to be? Should we train?"),
    assistant("The hardest days are 900-1,000 m of climbing with a 7-8 kg pack. If you can do "
              "a 15 km weekend hike with 800 m of ascent and feel fine the next day, you're "
              "in good shape. From April I'd add one long hike a fortnight with a loaded pack, "
              "and some step-downs and squats for the knee."),
    user("Is the route well marked? I'm a bit worried about getting lost."),
    assistant("Very well marked: red-and-white waymarks with the number 1 in a blue triangle, "
              "and signposts at junctions. Still carry a paper map (Tabacco 1:25,000, sheets "
              "031, 03 and 025 cover most of it) and an offline map on the phone."),
    user("Can you remind me which nights we still need to book?"),
    assistant("Booked: Fanes (Jul 12). Waitlist: Lagazuoi (Jul 13). Still to book: Biella "
              "(Jul 11, opens Jan 15), Averau (Jul 14), Città di Fiume (Jul 15), Coldai (Jul "
              "16), Vazzoler (Jul 17), Carestiato (Jul 18), Pian de Fontana (Jul 19), plus the "
              "night before at Braies or Dobbiaco (Jul 10)."),
    Scratchpad((
        "AV1 dates: arrive Jul 10, walk Jul 11-20, spare day Jul 21, fly home Jul 22-23",
        "Booked: Rifugio Fanes Jul 12 (FAN-20271-0712), pay €40 deposit by Nov 19",
        "Waitlist: Rifugio Lagazuoi Jul 13 (LAG-W-3318, position 6)",
        "To book: Biella (opens Jan 15), Averau, Città di Fiume, Coldai, Vazzoler",
        "To book: Carestiato, Pian de Fontana, night before in Dobbiaco",
        "Every request: severe peanut allergy + pescatarian",
        "Day 3: take Passo Tadega, not Forcella del Lago (knee)",
        "Day 10: maybe split the descent (knee)",
    )),
    Recall("peanut allergy hut booking", "session",
           judged=(("allergic to peanuts", 3), ("peanut allergy", 2))),
    user("Great. One last thing for tonight: is there phone signal along the way?"),
    assistant("Patchy. Most huts have some mobile signal or Wi-Fi, but long stretches between "
              "them don't. Download offline maps, tell the huts your plan (they expect you), "
              "and save 112 (European emergency) and 118 (Italian mountain rescue)."),
    user("Perfect. Thanks, this is a great start."),
    assistant("Enjoy the planning! The deposit for Fanes is due within a week, and the next "
              "milestone is Jan 15."),
    Pause(minutes=60 * 20),
    user("Quick follow-up: I paid the Fanes deposit this morning."),
    assistant("Noted: Fanes is fully confirmed for July 12."),
    Summarize(token_budget=2500),
))

MEMORY_PAPERS = Session("research-memory-papers", RESEARCH, at(15, 20, 10), (
    RESEARCH_SYSTEM,
    user("Switching topics: for work I'm reading up on long-term memory for LLM agents. "
         "Where should I start?", tags=("papers",)),
    tool("search_papers", {"query": "long-term memory LLM agents retrieval", "limit": 4}, [
        {"id": "arXiv:2304.03442", "title": "Generative Agents: Interactive Simulacra of "
         "Human Behavior", "year": 2023},
        {"id": "arXiv:2310.08560", "title": "MemGPT: Towards LLMs as Operating Systems",
         "year": 2023},
        {"id": "arXiv:2307.03172", "title": "Lost in the Middle: How Language Models Use "
         "Long Contexts", "year": 2023},
        {"id": "doi:10.1145/1571941.1572114", "title": "Reciprocal Rank Fusion outperforms "
         "Condorcet and individual Rank Learning Methods", "year": 2009}]),
    assistant("Four that fit together well:\n"
              "1. Generative Agents (Park et al., 2023): a memory stream scored by recency, "
              "importance and relevance.\n"
              "2. MemGPT (Packer et al., 2023): the context window as main memory, with the "
              "agent paging facts in and out of external storage.\n"
              "3. Lost in the Middle (Liu et al., 2023): why just stuffing more into the "
              "context doesn't work.\n"
              "4. Reciprocal Rank Fusion (Cormack, Clarke and Büttcher, 2009): a simple way to "
              "merge keyword and vector search results."),
    user("Start with Lost in the Middle. What's the main finding?"),
    tool("fetch_paper", {"id": "arXiv:2307.03172", "section": "abstract"}, {
        "title": "Lost in the Middle: How Language Models Use Long Contexts",
        "abstract_excerpt": "performance is often highest when relevant information occurs "
                            "at the beginning or end of the input context, and significantly "
                            "degrades when models must access relevant information in the "
                            "middle of long contexts"}),
    assistant("On multi-document QA and key-value retrieval, accuracy is highest when the "
              "relevant passage is at the start or the end of the context and drops markedly "
              "when it sits in the middle, even for models built for long contexts. A "
              "U-shaped curve. The practical lesson for memory: retrieve less, rank well, and "
              "put the most relevant items at the edges.", tags=("papers", "long-context")),
    user("How does that relate to the Generative Agents scoring?"),
    assistant("They're complementary. Generative Agents decides what to retrieve: each "
              "memory gets a weighted sum of recency (exponential decay), importance (rated "
              "by the model when stored) and relevance (embedding similarity). Lost in the "
              "Middle is about how to present what you retrieved. A memory system wants both: "
              "a good score, then a short, well-ordered context."),
    user("And RRF? I keep seeing k=60."),
    assistant("RRF scores each document by summing 1/(k + rank) over the result lists it "
              "appears in. It only uses ranks, so it merges BM25 and vector results without "
              "calibrating their scores. k=60 is the value from the original paper; it damps "
              "the advantage of being first in one list."),
    user("Let me try that on our own notes. Search my memory for anything I saved about "
         "retrieval."),
    Recall("retrieval ranking fusion", "namespace",
           judged=(("reciprocal rank fusion", 3), ("rrf scores", 3))),
    assistant("Your reading list note mentions hybrid retrieval and RRF; nothing else saved "
              "on the topic yet."),
    user("Can the Monday paper digest cover agent memory from now on?"),
    assistant("Done: 'weekly-paper-digest' (Mondays at 9:00 New York time) now looks for "
              "agent-memory papers too, starting tomorrow."),
    user("Thanks. Save a short note on Lost in the Middle so I can cite it later."),
    assistant("Saved as 'paper-lost-in-the-middle' (alias 'liu-2023')."),
))

GEAR_LIST = Session("research-gear-list", RESEARCH, at(18, 18, 45), (
    RESEARCH_SYSTEM,
    user("Can we make the packing list for the Alta Via? Keep it light, 7-8 kg max without "
         "water.", tags=("trip", "gear")),
    Recall("peanut allergy", "namespace",
           judged=(("allergic to peanuts", 3), ("severe peanut allergy", 2))),
    assistant("Here's a first pass, grouped so it's easy to check off. I've kept the "
              "allergy kit at the top, since you never hike without it."),
    Scratchpad((
        "EpiPen ×2 + antihistamines (peanut allergy): top lid pocket",
        "Allergy card in Italian: \"Sono gravemente allergico alle arachidi\"",
        "Backpack 30-35 L with rain cover",
        "Trail shoes or light boots, broken in",
        "Trekking poles (knee!)",
        "2 hiking T-shirts (merino)",
        "1 long-sleeve base layer",
        "Fleece or light insulated jacket",
        "Waterproof jacket with hood",
        "Waterproof overtrousers",
        "Hiking trousers + shorts",
        "3 pairs hiking socks",
        "Underwear ×3",
        "Warm hat + light gloves (Lagazuoi is 2,752 m)",
        "Sun hat + sunglasses (cat. 3)",
        "Sunscreen SPF 50 + lip balm",
        "Silk sleeping-bag liner (compulsory in huts)",
        "Hut clothes: light trousers, T-shirt",
        "Headlamp (Lagazuoi tunnels) + spare batteries",
        "Water: 2 × 1 L bottles",
        "Snacks, peanut-free: check every label",
        "First-aid kit + blister plasters",
        "Knee support",
        "Phone + offline maps + power bank",
        "Tabacco maps 031, 03, 025",
        "Passport, EHIC, hut booking confirmations",
        "Cash €400-500 + card",
        "Earplugs (dormitories)",
    )),
    user("That's a lot of items. Is the power bank necessary? Huts have sockets."),
    assistant("Some huts charge for sockets or have only a few for everyone, and solar-powered "
              "ones may ration electricity. A 10,000 mAh power bank (about 180 g) is cheap "
              "insurance for maps and emergency calls. I'd keep it."),
    user("Fine. What can I leave out to save weight?"),
    assistant("Easy wins: one of the two T-shirts if you're happy washing each evening, the "
              "shorts (hike in convertible trousers), and the paper map for sheet 025 if you "
              "decide to end at Pian de Fontana. That saves about 400 g."),
    user("Keep the shorts, drop the second T-shirt. What should Lena carry that I don't "
         "need twice?"),
    assistant("Share: the first-aid kit, sunscreen, the power bank and the maps. Don't share: "
              "the EpiPens and the allergy card. Those stay with you, and Lena should know "
              "where they are and how to use the pen."),
    user("Good call. Let's finish this later, I need to order a liner."),
    assistant("The list is on the scratchpad; 28 items so far."),
))


# -- ops-agent: on-call and deploy assistant for Ledgerly's platform ------------------------

OPS_SYSTEM = system(
    "You are the ops assistant for Ledgerly's platform team. You can query metrics, read "
    "logs, list and roll back deploys, and post status updates. Prefer the smallest safe "
    "change; never act on production without a human's go-ahead.")

POSTGRES_UPGRADE = Session("ops-postgres-upgrade-plan", OPS, at(13, 10, 0), (
    OPS_SYSTEM,
    user("We need to plan the Postgres 15 → 16 upgrade for billing-db. What are our "
         "options?", name="marco", tags=("postgres", "planning")),
    tool("describe_database", {"name": "billing-db"}, {
        "engine": "postgres 15.8", "size_gb": 412, "replicas": 2, "extensions":
        ["pg_stat_statements", "pgcrypto"], "peak_writes_per_s": 1800}),
    assistant("For a 412 GB primary with two replicas there are two realistic paths:\n"
              "1. pg_upgrade --link: minutes of downtime, but the replicas must be rebuilt "
              "afterwards and rolling back means restoring from backup.\n"
              "2. Logical replication to a new 16 cluster: near-zero downtime and an easy "
              "rollback (the old cluster stays), at the cost of setting up and watching "
              "replication for a few days.\n"
              "Both extensions are available on 16."),
    user("Downtime is expensive for us: invoices are generated on the hour. Logical "
         "replication it is.", name="marco"),
    assistant("Then the plan is: build the 16 cluster, publish all tables from 15, let the "
              "initial copy finish (about 6-8 h at this size), watch the lag for a couple of "
              "days, then switch the app over in a short write pause between two invoice "
              "runs."),
    user("Important rule before we schedule anything: we never deploy on Fridays. No "
         "production changes Friday through Sunday unless it's an incident fix.",
         name="marco", importance=SALIENT, tags=("policy", "deploys")),
    assistant("Understood, and I'll hold every plan to it: no production changes on Fridays, "
              "Saturdays or Sundays except incident fixes. For this upgrade that means "
              "starting the copy on a Monday and switching over on a Tuesday or Wednesday.",
              importance=SALIENT, tags=("policy", "deploys")),
    Scratchpad((
        "Build pg16 cluster billing-db-16 (same instance class)",
        "Check sequences: logical replication doesn't copy them; sync at cutover",
        "CREATE PUBLICATION on 15; SUBSCRIPTION on 16; initial copy ~6-8 h",
        "Watch replication lag for 48 h",
        "Cutover in the write pause between two hourly invoice runs (Tue/Wed)",
        "Keep 15 running for a week as the rollback",
        "Never on Fri-Sun",
    )),
    user("What can go wrong at cutover?", name="marco"),
    assistant("Three things to rehearse: sequences (not replicated, so set them on 16 before "
              "writes resume), large objects (none here, I checked), and connection strings "
              "(switch via the pgbouncer config, not app env vars, so it's one reload). I'd "
              "do a full rehearsal on staging first."),
    user("Let's rehearse on staging on Tuesday the 24th.", name="marco"),
    tool("calendar_add", {"title": "billing-db pg16 cutover rehearsal (staging)",
                          "date": "2026-11-24T10:00:00+01:00", "attendees":
                          ["marco", "ines"]},
         {"event_id": "cal_8810", "ok": True}),
    assistant("Booked: Tue Nov 24, 10:00 Paris time, with Marco and Inès."),
))

LATENCY_INCIDENT = Session("ops-incident-billing-api-latency", OPS, at(16, 14, 21), (
    OPS_SYSTEM,
    system("PagerDuty alert: billing-api p99 latency above 2,000 ms for 5 minutes "
           "(threshold 800 ms). Severity: high.", importance=0.8),
    user("I'm on it. What changed?", name="ines", tags=("incident", "billing-api")),
    tools(ToolCall("query_metrics", {"service": "billing-api", "metric": "latency_p99_ms",
                                     "window": "2h", "step": "15m"},
                   {"points": [212, 205, 220, 214, 1380, 2240, 2610, 2580]}),
          ToolCall("get_recent_deploys", {"service": "billing-api", "since": "6h"},
                   [{"version": "v2.14.0", "deployed_at": "2026-11-16T13:05:12Z",
                     "author": "ci", "changes": ["render invoice PDFs on request",
                                                 "bump pg driver 3.1 → 3.2"]}]),
          text="Pulling latency and recent deploys together."),
    assistant("p99 was flat around 210 ms until 13:15, then jumped to 1.4 s and is now at "
              "2.6 s. v2.14.0 went out at 13:05 with two changes: invoice PDFs are now "
              "rendered on request, and the Postgres driver went from 3.1 to 3.2. The timing "
              "points at that deploy.", tags=("incident",)),
    user("Errors too, or just slow?", name="ines"),
    tool("query_metrics", {"service": "billing-api", "metric": "error_rate",
                           "window": "1h"}, {"current": 0.031, "baseline": 0.0004,
                                             "top_status": {"503": 0.027, "500": 0.004}}),
    assistant("Errors too: 3.1% against a 0.04% baseline, mostly 503s, which we return when "
              "a request can't get a database connection in time."),
    tool("tail_logs", {"service": "billing-api", "grep": "pool", "lines": 5}, [
        "14:19:02 WARN db pool exhausted: 20/20 in use, 143 waiting",
        "14:19:02 WARN slow request GET /invoices/INV-2384/pdf 9120 ms",
        "14:19:03 WARN db pool exhausted: 20/20 in use, 151 waiting",
        "14:19:05 ERROR acquire timeout after 5000 ms (GET /v1/subscriptions)",
        "14:19:05 WARN slow request GET /invoices/INV-2390/pdf 8870 ms"]),
    assistant("The logs explain it: PDF requests take ~9 s and hold a database connection the "
              "whole time, so the pool of 20 is exhausted and everything else queues behind "
              "them. The new on-request PDF rendering is the cause; the driver bump looks "
              "innocent.", importance=0.8, tags=("incident", "root-cause")),
    Scratchpad((
        "14:15 p99 up after v2.14.0 (13:05): on-request PDF rendering holds db connections",
        "Pool 20/20 exhausted, 503s at 3.1%",
        "Roll back to v2.13.4? waiting for Inès",
        "Status page: investigating",
        "Follow-up: render PDFs in the worker queue, not in the request",
    )),
    user("Roll back to v2.13.4. And post a status update.", name="ines"),
    tools(ToolCall("rollback_deploy", {"service": "billing-api", "to_version": "v2.13.4"},
                   {"ok": True, "version": "v2.13.4", "started_at": "2026-11-16T14:24:02Z",
                    "healthy_pods": "6/6"}),
          ToolCall("post_status_update", {
              "component": "Billing API", "status": "identified",
              "message": "Elevated latency and errors on the Billing API since 13:15 UTC. "
                         "We've identified the cause and are rolling back."},
              {"ok": True, "incident_url": "https://status.ledgerly.example/inc/7731"})),
    assistant("Rollback to v2.13.4 is done, 6/6 pods healthy, and the status page says "
              "'identified' (inc/7731). I'll watch latency for the next 10 minutes."),
    Pause(minutes=12),
    tool("query_metrics", {"service": "billing-api", "metric": "latency_p99_ms",
                           "window": "20m", "step": "5m"}, {"points": [2480, 640, 231, 209]}),
    assistant("Recovered: p99 is back to 209 ms and errors are at baseline since 14:35. Shall "
              "I resolve the status page incident?"),
    user("Yes, resolve it. Then draft the postmortem summary.", name="ines"),
    tool("post_status_update", {"component": "Billing API", "status": "resolved",
                                "message": "Latency and error rates are back to normal. "
                                           "A fix will follow in the next release."},
         {"ok": True}),
    assistant("Resolved. Postmortem draft:\n"
              "Impact: 13:15-14:35 UTC, p99 up to 2.6 s, 3.1% of API requests failed (503).\n"
              "Cause: v2.14.0 rendered invoice PDFs inside the request, holding a database "
              "connection for ~9 s each; the pool of 20 ran out.\n"
              "Fix: rolled back to v2.13.4 at 14:24.\n"
              "Follow-ups: move PDF rendering to the worker queue (v2.14.1); alert on pool "
              "saturation, not only latency; load-test PDF endpoints before release.",
              importance=0.8, tags=("incident", "postmortem")),
    user("Good. I'll take it from here. Thanks.", name="ines"),
    Recall("db pool exhausted connection", "session",
           judged=(("pool exhausted", 3), ("pdf requests take", 2))),
    Scratchpad((
        "Resolved 14:35: rolled back to v2.13.4, status inc/7731 resolved",
        "Postmortem draft posted; owner Inès",
        "v2.14.1 must render PDFs in the worker queue",
        "Add alert: db pool saturation > 90% for 2 min",
    )),
))

FRIDAY_DEPLOY = Session("ops-friday-deploy", OPS, at(20, 15, 5), (
    OPS_SYSTEM,
    user("v2.14.1 is green on staging: PDFs render in the worker queue now. Can we ship it "
         "to production this afternoon?", name="ines", tags=("deploys", "billing-api")),
    Recall("deploy on Fridays policy", "namespace",
           judged=(("never deploy on fridays", 3), ("no production changes", 3))),
    assistant("Not today: it's Friday, and the team rule (Marco, Nov 13) is never to deploy "
              "on Fridays, with no production changes Friday through Sunday except incident "
              "fixes. Billing-api is stable on v2.13.4, so this isn't an incident fix.",
              tags=("policy", "deploys")),
    user("Fair. Monday morning then?", name="ines"),
    tool("get_deploy_windows", {"service": "billing-api", "from": "2026-11-23"}, {
        "windows": ["2026-11-23T09:30:00+01:00", "2026-11-23T14:00:00+01:00"],
        "note": "avoid :55-:05, the hourly invoice run"}),
    assistant("Monday Nov 23 at 9:30 Paris time is the first window, clear of the hourly "
              "invoice run. I'll schedule the deploy for then, notify you when it runs, and "
              "watch pool saturation for 30 minutes afterwards."),
    user("Do it.", name="ines"),
    tool("create_schedule", {"name": "deploy-billing-api-v2.14.1", "cadence": {
        "kind": "once", "value": "2026-11-23T09:30", "timezone": "Europe/Paris"},
        "goal": "Deploy billing-api v2.14.1 and watch db pool saturation for 30 min."},
         {"ok": True, "status": "active", "next_run_at": "2026-11-23T08:30:00.000Z"}),
    assistant("Scheduled 'deploy-billing-api-v2.14.1' for Mon Nov 23, 09:30 Europe/Paris. "
              "Have a good weekend!"),
))

SESSIONS = (ACME_DOUBLE_CHARGE, SEAT_DOWNGRADE, WEBHOOK_FAILURES, VAT_INVOICE,
            ALTA_VIA_1, MEMORY_PAPERS, GEAR_LIST,
            POSTGRES_UPGRADE, LATENCY_INCIDENT, FRIDAY_DEPLOY)


# -- notes and facts -----------------------------------------------------------------------


@dataclass(frozen=True)
class DemoNote:
    """A note as ``engine.add_note`` takes it, written at ``written``."""

    namespace: str
    name: str
    content: str
    category: str
    tags: tuple[str, ...]
    source: str
    written: datetime
    importance: float = 0.5
    aliases: tuple[str, ...] = ()


NOTES = (
    DemoNote(SUPPORT, "customer-acme",
             "Acme Corp (cus_8YqL2): Scale plan, 140 seats, billed monthly in USD to the Visa "
             "ending 4417. Billing contacts: ap@acme.example and Priya Natarajan "
             "(priya@acme.example). Account manager: Daniel Okafor. Double-charged twice in "
             "2026 (SUP-1184 in March, INV-2291 in November, both refunded); escalate any "
             "further billing problem to Daniel straight away.",
             "core", ("customer", "enterprise", "billing"), "import", at(2, 8, 0), 0.8,
             ("acme", "acme-corp")),
    DemoNote(SUPPORT, "refund-policy",
             "Refunds: duplicate or erroneous charges are refunded in full, any age. Other "
             "refunds within 30 days of the charge. The support bot may refund up to $5,000 "
             "on its own; above that a human in billing-ops approves. Card refunds take 5-10 "
             "business days.",
             "core", ("policy", "refund"), "import", at(1, 9, 0), 0.7, ("refunds",)),
    DemoNote(SUPPORT, "proration-rules",
             "Monthly plans: seat changes apply at once; a decrease creates a credit note for "
             "the unused days (seats × price × days left / days in period), applied to the "
             "next invoice. Annual plans: decreases take effect at renewal.",
             "core", ("policy", "billing", "seats"), "import", at(1, 9, 5)),
    DemoNote(SUPPORT, "webhook-secret-rotation",
             "Rotating a webhook signing secret with 'expire immediately' breaks every "
             "delivery until the customer deploys the new secret (401 'signature "
             "verification failed'). Advise the 24 h dual-secret mode; after a fix, replay "
             "failed deliveries oldest first. Seen with Parcelwise on 2026-11-17.",
             "conversation", ("webhooks", "developer", "troubleshooting"), "agent",
             at(17, 14, 0), 0.6),
    DemoNote(SUPPORT, "daily-2026-11-19",
             "Support digest for Nov 19: 1 conversation (Kessler Maschinenbau: VAT ID added, "
             "INV-2417 reissued as INV-2417-R1 under reverse charge). No refunds. PAY-412 "
             "(double-charge fix) still targeted for Nov 24.",
             "daily", ("digest",), "agent", at(20, 7, 0)),
    DemoNote(RESEARCH, "user-profile",
             "Sam: severely allergic to peanuts (carries an EpiPen); pescatarian (fish, no "
             "meat). Left knee hurts on long descents: use poles, avoid steep scree. Hikes "
             "most weekends with partner Lena. Based in Amsterdam; prefers metric units.",
             "core", ("profile", "health"), "user", at(12, 19, 58), 0.9, ("sam", "me")),
    DemoNote(RESEARCH, "trip-alta-via-1",
             "Alta Via 1, July 2027, with Lena: arrive Jul 10 (Dobbiaco), walk Jul 11-20 in "
             "10 stages from Lago di Braies to La Pissa/Belluno, spare day Jul 21. Fanes "
             "booked for Jul 12 (deposit paid), Lagazuoi waitlisted for Jul 13. Other huts "
             "open bookings Jan-Feb; reminders set for Jan 15 and Feb 1. Budget ~€2,600 for "
             "two, excluding flights.",
             "core", ("trip", "hiking", "dolomites"), "agent", at(13, 16, 0), 0.8,
             ("av1", "dolomites-trip")),
    DemoNote(RESEARCH, "reading-list",
             "Agent memory reading list: Generative Agents (Park et al. 2023), MemGPT "
             "(Packer et al. 2023), Lost in the Middle (Liu et al. 2023), Reciprocal Rank "
             "Fusion (Cormack, Clarke, Büttcher 2009) for hybrid keyword + vector retrieval. "
             "Next: papers on memory consolidation and forgetting.",
             "core", ("papers", "reading"), "user", at(15, 20, 5)),
    DemoNote(RESEARCH, "paper-lost-in-the-middle",
             "Liu et al. 2023, arXiv:2307.03172. Accuracy is highest when the relevant "
             "passage is at the start or end of the context and drops when it is in the "
             "middle (a U-shaped curve), even for long-context models. For memory: retrieve "
             "fewer items, rank them well, put the best at the edges.",
             "conversation", ("papers", "long-context"), "agent", at(15, 20, 18), 0.6,
             ("liu-2023",)),
    DemoNote(RESEARCH, "daily-2026-11-18",
             "Nov 18: started the Alta Via packing list (28 items, target 7-8 kg without "
             "water); decided to drop the second T-shirt, keep the shorts. To do: order a silk "
             "liner.",
             "daily", ("trip", "gear"), "agent", at(18, 21, 0)),
    DemoNote(OPS, "deploy-policy",
             "Never deploy on Fridays. No production changes Friday through Sunday unless "
             "it is an incident fix. Deploy windows avoid :55-:05, when the hourly invoice "
             "run happens. Set by Marco on 2026-11-13.",
             "core", ("policy", "deploys"), "user", at(13, 10, 30), 0.9,
             ("friday-rule", "change-freeze")),
    DemoNote(OPS, "runbook-billing-api-latency",
             "billing-api latency runbook: 1. Check p99 and error rate (query_metrics). "
             "2. List deploys in the last 6 h. 3. grep logs for 'pool exhausted' and slow "
             "requests. 4. If a deploy is the cause, roll back first, investigate after. "
             "5. Post a status update within 15 minutes of the page.",
             "core", ("runbook", "billing-api"), "import", at(3, 11, 0), 0.7,
             ("billing-api-runbook",)),
    DemoNote(OPS, "incident-2026-11-16",
             "Billing API latency incident, 2026-11-16 13:15-14:35 UTC. v2.14.0 rendered "
             "invoice PDFs in the request path, holding db connections ~9 s; pool of 20 "
             "exhausted, p99 2.6 s, 3.1% 503s. Rolled back to v2.13.4. Follow-ups: PDFs in "
             "the worker queue (v2.14.1), pool saturation alert, load-test PDF endpoints.",
             "conversation", ("incident", "postmortem", "billing-api"), "agent",
             at(16, 15, 10), 0.8, ("inc-7731",)),
    DemoNote(OPS, "oncall-rotation",
             "On-call rotation, weekly from Monday 09:00 Paris: Nov 16 Inès, Nov 23 Marco, "
             "Nov 30 Kofi. Escalation: platform lead (Marco) after 15 minutes.",
             "core", ("oncall",), "import", at(9, 9, 0)),
)

FACTS = (  # (namespace, category, key, value, source, written)
    (SUPPORT, "account", "acme.plan", "Scale, 140 seats, monthly", "agent", at(2, 8, 0)),
    (SUPPORT, "account", "acme.account_manager", "Daniel Okafor", "agent", at(2, 8, 0)),
    (SUPPORT, "limits", "refund_without_approval_usd", "5000", "user", at(1, 9, 0)),
    (RESEARCH, "health", "allergy", "peanuts (severe, carries EpiPen)", "user",
     at(12, 19, 41)),
    (RESEARCH, "preferences", "diet", "pescatarian", "user", at(12, 19, 52)),
    (RESEARCH, "trip", "av1.start_date", "2027-07-11", "agent", at(12, 19, 50)),
    (OPS, "policy", "deploy_days", "Monday to Thursday only", "user", at(13, 10, 30)),
    (OPS, "service", "billing-api.version", "v2.13.4 (rolled back from v2.14.0)", "agent",
     at(16, 14, 30)),
)


# -- schedules and their runs --------------------------------------------------------------


@dataclass(frozen=True)
class DemoRun:
    """One run of a schedule: how it went, what it printed, how long it took."""

    status: str  # "ok", "failed" or "timeout"
    output: str
    seconds: float


@dataclass(frozen=True)
class DemoSchedule:
    """A schedule created at ``created``; its runs fill its fire times up to the anchor
    (or the pause), one each."""

    name: str
    user_id: str
    goal: str
    cadence: dict[str, str]
    created: datetime
    runs: tuple[DemoRun, ...] = ()
    notification_policy: str = "always"
    paused: tuple[datetime, str] | None = None  # when, and the reason given


def _health(p99: int, errors: str, pods: str = "6/6") -> DemoRun:
    """A health check that found billing-api well."""
    return DemoRun("ok", f"billing-api healthy: p99 {p99} ms, error rate {errors}, "
                         f"{pods} pods ready, db pool 41% used", 3.2)


SCHEDULES = (
    DemoSchedule(
        "daily-support-digest", SUPPORT,
        "Summarise yesterday's support conversations: refunds issued, escalations, open "
        "tickets, and anything the account managers should know.",
        {"kind": "cron", "value": "0 8 * * *", "timezone": "Europe/Paris"},
        at(13, 16, 0), (
            DemoRun("ok", "Nov 13: 0 conversations. Open: PAY-412 (double-charge fix).", 8.1),
            DemoRun("ok", "Nov 14: 1 conversation (Brightline Studio: 25 → 18 seats, "
                          "credit note CN-0388 $107.52). No escalations.", 11.4),
            DemoRun("ok", "Nov 15: no conversations.", 4.9),
            DemoRun("failed", "summarizer endpoint timed out after 60 s (HTTP 504 from "
                              "llm-gateway); no digest written", 60.3),
            DemoRun("ok", "Nov 17: 1 conversation (Parcelwise: webhook secret rotated, 214 "
                          "deliveries replayed, 0 failed). Docs gap passed to product.", 12.7),
            DemoRun("ok", "Nov 18: no conversations.", 5.2),
            DemoRun("ok", "Nov 19: 1 conversation (Kessler Maschinenbau: VAT ID added, "
                          "INV-2417 reissued). PAY-412 still targeted for Nov 24.", 10.9),
        )),
    DemoSchedule(
        "billing-api-health-check", OPS,
        "Check billing-api: p99 latency, error rate, ready pods and db pool use; alert "
        "on-call when any is out of bounds.",
        {"kind": "interval", "value": "1h30m", "timezone": "UTC"},
        at(19, 23, 10), (
            _health(212, "0.03%"), _health(208, "0.04%"), _health(215, "0.03%"),
            _health(204, "0.02%"), _health(219, "0.04%"), _health(231, "0.05%"),
            _health(226, "0.04%"), _health(240, "0.05%"),
            DemoRun("failed", "metrics API returned 503 Service Unavailable (3 attempts); "
                              "health unknown", 31.0),
            DemoRun("timeout", "no answer from metrics API within 300 s", 300.0),
            DemoRun("failed", "metrics API returned 503 Service Unavailable (3 attempts); "
                              "health unknown. Paging on-call after the next failure.", 31.4),
        ), notification_policy="on_failure"),
    DemoSchedule(
        "weekly-paper-digest", RESEARCH,
        "Find new papers on retrieval and long-term memory for LLM agents (arXiv cs.CL, "
        "cs.AI, cs.IR) and send Sam a digest of the five most relevant, one paragraph each.",
        {"kind": "cron", "value": "0 9 * * mon", "timezone": "America/New_York"},
        at(6, 18, 0), (
            DemoRun("ok", "5 papers: query rewriting for RAG; reranking with small models; "
                          "chunking strategies for long documents; long-context evaluation; "
                          "retrieval for code assistants. Sent to Sam.", 94.2),
            DemoRun("ok", "5 papers: episodic vs semantic memory in agents; retrieval "
                          "evaluation with graded judgments; reflection-based memory "
                          "compression; long-context vs retrieval trade-offs; memory "
                          "poisoning risks. Sent to Sam.", 101.7),
        )),
    DemoSchedule(
        "nightly-backup-verify", OPS,
        "Restore last night's billing-db backup into a scratch instance, run the integrity "
        "checks and compare row counts with production.",
        {"kind": "cron", "value": "30 2 * * *", "timezone": "UTC"},
        at(12, 10, 0), (
            DemoRun("ok", "backup 2026-11-13 restored in 41 min; checks passed; row counts "
                          "match (invoices 18,204,331)", 2710.5),
            DemoRun("ok", "backup 2026-11-14 restored in 40 min; checks passed; row counts "
                          "match (invoices 18,231,907)", 2655.0),
            DemoRun("ok", "backup 2026-11-15 restored in 43 min; checks passed; row counts "
                          "match (invoices 18,240,112)", 2838.2),
            DemoRun("ok", "backup 2026-11-16 restored in 42 min; checks passed; row counts "
                          "match (invoices 18,262,045)", 2790.9),
            DemoRun("failed", "restore failed: AccessDenied reading "
                              "s3://ledgerly-backups/billing-db/2026-11-17.tar.zst", 12.4),
            DemoRun("failed", "restore failed: AccessDenied reading "
                              "s3://ledgerly-backups/billing-db/2026-11-18.tar.zst", 11.9),
        ), notification_policy="on_failure",
        paused=(at(18, 9, 15), "paused by Marco: the backup bucket is moving to eu-west-3 "
                               "(CHG-1182); resume after Nov 24")),
    DemoSchedule(
        "deploy-billing-api-v2.14.1", OPS,
        "Deploy billing-api v2.14.1 and watch db pool saturation for 30 min.",
        {"kind": "once", "value": "2026-11-23T09:30", "timezone": "Europe/Paris"},
        at(20, 15, 8)),
)
