"""research-assistant's conversations: Sam plans a trek on the Alta Via 1 and reads papers."""

from __future__ import annotations

from workbench.demo.script import (
    RESEARCH,
    SALIENT,
    Pause,
    Recall,
    Scratchpad,
    Session,
    Summarize,
    ToolCall,
    assistant,
    at,
    system,
    tool,
    tools,
    user,
)

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
