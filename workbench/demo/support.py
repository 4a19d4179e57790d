"""support-bot's conversations: customer support for Ledgerly, a subscription-billing SaaS."""

from __future__ import annotations

from workbench.demo.script import (
    SALIENT,
    SUPPORT,
    Compact,
    Pause,
    Recall,
    Scratchpad,
    Session,
    assistant,
    at,
    system,
    tool,
    user,
)

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
