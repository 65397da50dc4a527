/*
 * The watchlist panel of the chat page: the caller's watchlists (create, change, delete, brief now) and
 * each one's briefs, newest first.
 *
 * A brief written by a research run is shown by app.js's own answer view, fed by its run's events through
 * the same RunFollower as a research answer (charts, confidence, citation checks and all); a brief with
 * nothing material shows its stored answer in that view without a run. Briefs still running, and briefs
 * whose deliveries are still being tried, are read again until they settle; the open watchlist's list is
 * read again now and then, so scheduled briefs appear as they arrive.
 *
 * The API's refusals name their field ("schedule: ..."): the message is shown under the form as it is
 * and the field it names is marked invalid. Everything is built as elements with text, never HTML strings.
 */
(() => {
  "use strict";

  const { httpUrl, element, button, externalLink } = window.ChatDom;
  const { api, ApiError, AnswerView, RunFollower, browserTimeZone } = window.ChatAnswers;

  const POLL_MS = 2000; // a running brief, or a delivery still being tried
  const LIST_REFRESH_MS = 30_000; // the open watchlist's briefs, for those the schedule makes
  const UNSETTLED_DELIVERIES = new Set(["pending", "retrying"]);
  // The field an API message names ("schedule: ...", "channels.0.url: ...") -> the input it is about.
  const FIELD_INPUTS = {
    name: "watchlist-name",
    symbols: "watchlist-symbols",
    schedule: "watchlist-schedule",
    timezone: "watchlist-timezone",
    url: "watchlist-webhook-url",
    secret: "watchlist-webhook-secret",
    to: "watchlist-email",
    channels: "watchlist-webhook-url",
  };
  const when = new Intl.DateTimeFormat("en", { dateStyle: "medium", timeStyle: "short" });

  const byId = (id) => document.getElementById(id);
  const els = {
    toggle: byId("watchlists-toggle"),
    panel: byId("watchlists"),
    chat: [byId("transcript"), byId("ask-form")],
    list: byId("watchlist-list"),
    newButton: byId("watchlist-new"),
    editor: byId("watchlist-editor"),
    form: byId("watchlist-form"),
    formTitle: byId("watchlist-form-title"),
    save: byId("watchlist-save"),
    error: byId("watchlist-error"),
    detail: byId("watchlist-detail"),
    detailTitle: byId("watchlist-detail-title"),
    meta: byId("watchlist-meta"),
    briefNow: byId("brief-now"),
    remove: byId("watchlist-delete"),
    note: byId("watchlist-note"),
    briefs: byId("briefs"),
    briefsEmpty: byId("briefs-empty"),
  };
  const input = (name) => els.form.elements.namedItem(name);

  const state = { watchlists: [], selected: null, items: new Map(), refreshTimer: null };

  function describe(error) {
    return error.code === "csrf_failed" ? "This page's session has expired. Reload the page, then try again." : error.message;
  }

  // --- the form ---------------------------------------------------------------------------------------------

  function showFormError(message = "") {
    for (const field of els.form.querySelectorAll("[aria-invalid]")) {
      field.removeAttribute("aria-invalid");
      const hints = (field.getAttribute("aria-describedby") || "").replace(/\s*watchlist-error/, "").trim();
      if (hints) field.setAttribute("aria-describedby", hints);
      else field.removeAttribute("aria-describedby");
    }
    els.error.textContent = message;
    els.error.hidden = !message;
    const named = /^(\w+)(?:\.\d+\.(\w+))?:/.exec(message);
    const field = named ? byId(FIELD_INPUTS[named[2] || named[1]] || "") : null;
    if (field === null) return;
    field.setAttribute("aria-invalid", "true");
    field.setAttribute("aria-describedby", `${field.getAttribute("aria-describedby") || ""} watchlist-error`.trim());
  }

  function symbolsOf(text) {
    return text.split(/[\s,]+/).filter(Boolean);
  }

  /** The channels the form describes: a webhook (its secret left out when empty: a PATCH keeps the stored
   * one for the same URL), an e-mail address. */
  function channelsOf() {
    const channels = [];
    const url = input("webhook_url").value.trim();
    if (url) {
      const secret = input("webhook_secret").value;
      channels.push(secret ? { type: "webhook", url, secret } : { type: "webhook", url });
    }
    const to = input("email").value.trim();
    if (to) channels.push({ type: "email", to });
    return channels;
  }

  function formBody() {
    return {
      name: input("name").value.trim(),
      symbols: symbolsOf(input("symbols").value),
      schedule: input("schedule").value.trim(),
      timezone: input("timezone").value.trim(),
      channels: channelsOf(),
    };
  }

  /** What differs from the stored watchlist: a PATCH names only that (so an unchanged webhook is not checked
   * again). Channels are sent whole when any of them changed, or when a new secret is typed. */
  function changesFrom(watchlist, body) {
    const changes = {};
    for (const key of ["name", "schedule", "timezone"]) if (body[key] !== watchlist[key]) changes[key] = body[key];
    if (body.symbols.join(",") !== watchlist.symbols.join(",")) changes.symbols = body.symbols;
    const stored = JSON.stringify(watchlist.channels.map(({ type, url, to }) => (type === "webhook" ? { type, url } : { type, to })));
    if (JSON.stringify(body.channels) !== stored) changes.channels = body.channels;
    return changes;
  }

  function fillForm(watchlist) {
    const webhook = watchlist ? watchlist.channels.find((channel) => channel.type === "webhook") : null;
    const email = watchlist ? watchlist.channels.find((channel) => channel.type === "email") : null;
    input("name").value = watchlist ? watchlist.name : "";
    input("symbols").value = watchlist ? watchlist.symbols.join(", ") : "";
    input("schedule").value = watchlist ? watchlist.schedule : "";
    input("timezone").value = watchlist ? watchlist.timezone : browserTimeZone() || "UTC";
    input("webhook_url").value = webhook ? webhook.url : "";
    input("webhook_secret").value = "";
    input("webhook_secret").placeholder = webhook && webhook.secret_set ? "(kept unless you type a new one)" : "";
    input("email").value = email ? email.to : "";
    els.formTitle.textContent = watchlist ? `Edit ${watchlist.name}` : "New watchlist";
    els.save.textContent = watchlist ? "Save changes" : "Create";
    showFormError();
  }

  async function save(event) {
    event.preventDefault();
    const editing = state.selected;
    const body = formBody();
    els.save.disabled = true;
    try {
      const saved = editing
        ? await api(`/api/watchlists/${editing.id}`, { method: "PATCH", body: changesFrom(editing, body) })
        : await api("/api/watchlists", { method: "POST", body });
      await loadWatchlists();
      select(saved, { reloadBriefs: editing === null, editing: editing !== null });
      els.note.textContent = editing ? "Saved." : "";
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      showFormError(describe(error));
    } finally {
      els.save.disabled = false;
    }
  }

  // --- the watchlists ---------------------------------------------------------------------------------------

  async function loadWatchlists() {
    try {
      state.watchlists = await api("/api/watchlists");
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      showFormError(`Could not load the watchlists: ${describe(error)}`);
      return;
    }
    els.list.replaceChildren(
      ...state.watchlists.map((watchlist) => {
        const pick = button("watchlist-pick", watchlist.name);
        pick.dataset.watchlistId = watchlist.id;
        pick.setAttribute("aria-current", String(state.selected !== null && state.selected.id === watchlist.id));
        pick.append(element("span", "watchlist-symbols", watchlist.symbols.join(", ")));
        pick.addEventListener("click", () => select(watchlist, { reloadBriefs: true, editing: false }));
        const item = element("li");
        item.append(pick);
        return item;
      }),
    );
  }

  function metaLine(watchlist) {
    const parts = [watchlist.symbols.join(", "), `${watchlist.schedule} (${watchlist.timezone})`];
    if (watchlist.next_run_at) parts.push(`next brief ${when.format(new Date(watchlist.next_run_at))}`);
    const channels = watchlist.channels.map((channel) => (channel.type === "webhook" ? `webhook ${channel.url}` : `e-mail ${channel.to}`));
    parts.push(channels.length ? `delivered to ${channels.join(" and ")}` : "not delivered anywhere");
    return parts.join(" · ");
  }

  /** Show `watchlist` with its briefs (read again when `reloadBriefs`, or when another was open), its
   * settings in the form, open when `editing`. */
  function select(watchlist, { reloadBriefs, editing }) {
    const switching = state.selected === null || state.selected.id !== watchlist.id;
    state.selected = watchlist;
    fillForm(watchlist);
    els.editor.open = editing;
    els.detail.hidden = false;
    els.detailTitle.textContent = watchlist.name;
    els.meta.textContent = metaLine(watchlist);
    for (const pick of els.list.querySelectorAll("button")) {
      pick.setAttribute("aria-current", String(pick.dataset.watchlistId === watchlist.id));
    }
    if (switching) {
      els.note.textContent = "";
      clearBriefs();
    }
    if (switching || reloadBriefs) loadBriefs();
  }

  function startNew() {
    state.selected = null;
    clearBriefs();
    els.detail.hidden = true;
    fillForm(null);
    els.editor.open = true;
    for (const pick of els.list.querySelectorAll("button")) pick.setAttribute("aria-current", "false");
    input("name").focus();
  }

  async function remove() {
    const watchlist = state.selected;
    if (!watchlist || !window.confirm(`Delete the watchlist "${watchlist.name}" and its briefs?`)) return;
    try {
      await api(`/api/watchlists/${watchlist.id}`, { method: "DELETE" });
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      els.note.textContent = `Could not delete it: ${describe(error)}`;
      return;
    }
    startNew();
    await loadWatchlists();
  }

  // --- briefs -----------------------------------------------------------------------------------------------

  function briefWindow(brief) {
    return `${when.format(new Date(brief.since))} – ${when.format(new Date(brief.until))}`;
  }

  function changeItem(change) {
    const item = element("li");
    item.dataset.kind = change.kind;
    item.append(element("span", "change-symbol", change.symbol), element("span", "change-kind", change.kind), ` ${change.summary} `);
    const url = httpUrl(change.source.url);
    if (url !== null) item.append(externalLink(url, change.source.title || url, "change-source"));
    return item;
  }

  function deliveryText({ channel, status, attempts }) {
    return `${channel === "email" ? "e-mail" : channel} ${status} (${attempts} attempt${attempts === 1 ? "" : "s"})`;
  }

  /** One brief in the list: its window, status, changes and deliveries, and on demand its answer. */
  class BriefItem {
    constructor(brief) {
      this.brief = brief;
      this.opened = false;
      this.view = null; // the answer view shown, while open
      this.follower = null; // its run's events, for a brief written by a run
      this.shownStatus = null; // the status a stored answer was shown for
      this.pollTimer = null;
      this.root = element("li", "brief");
      this.root.dataset.briefId = brief.id;
      const head = element("div", "brief-head");
      this.window = element("span", "brief-window");
      this.status = element("span", "brief-status");
      this.toggle = button("brief-open", "Show the brief");
      this.toggle.setAttribute("aria-expanded", "false");
      this.toggle.setAttribute("aria-controls", `brief-${brief.id}`);
      this.toggle.addEventListener("click", () => (this.opened ? this.close() : this.open()));
      head.append(this.window, this.status, this.toggle);
      this.changes = element("ul", "brief-changes");
      this.deliveries = element("p", "brief-deliveries");
      this.body = element("div", "brief-body");
      this.body.id = `brief-${brief.id}`;
      this.body.hidden = true;
      this.root.append(head, this.changes, this.deliveries, this.body);
      this.update(brief);
    }

    update(brief) {
      this.brief = brief;
      this.root.dataset.status = brief.status;
      this.window.textContent = briefWindow(brief);
      this.status.textContent = brief.status;
      this.changes.replaceChildren(...brief.changes.map(changeItem));
      this.changes.hidden = brief.changes.length === 0;
      this.deliveries.textContent = brief.deliveries.length ? `Deliveries: ${brief.deliveries.map(deliveryText).join(" · ")}` : "";
      this.deliveries.hidden = brief.deliveries.length === 0;
      if (this.opened) this.showAnswer();
      const unsettled = brief.status === "running" || brief.deliveries.some((d) => UNSETTLED_DELIVERIES.has(d.status));
      clearTimeout(this.pollTimer);
      if (unsettled) this.pollTimer = setTimeout(() => this.refresh(), POLL_MS);
    }

    async refresh() {
      if (!this.root.isConnected) return;
      try {
        this.update(await api(`/api/briefs/${this.brief.id}`));
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        if (error.status !== 404) this.pollTimer = setTimeout(() => this.refresh(), POLL_MS);
      }
    }

    open() {
      this.opened = true;
      this.toggle.setAttribute("aria-expanded", "true");
      this.toggle.textContent = "Hide the brief";
      this.body.hidden = false;
      this.showAnswer();
    }

    /** A brief with a run: that run's answer, followed from its events as any research answer is (replayed
     * from the start for a finished run). Without one: the stored answer once the brief has settled. */
    showAnswer() {
      const { run_id: runId, status } = this.brief;
      if (this.follower !== null) return;
      if (runId !== null) {
        this.show(new AnswerView({ runId, question: this.title(), askNext: false }));
        this.view.root.dataset.runId = runId;
        const eventsUrl = `/api/runs/${runId}/events`;
        this.follower = new RunFollower({ runId, eventsUrl, view: this.view, onEnd: () => this.refresh() });
        this.follower.open();
        return;
      }
      if (status === this.shownStatus) return;
      this.shownStatus = status;
      if (status === "done") {
        const stored = { content: this.brief.answer, sources: this.brief.sources, status: "complete" };
        this.show(AnswerView.finished(stored, this.title(), { askNext: false }));
      } else {
        const failure = this.brief.error ? ` (${this.brief.error.message})` : "";
        const line = status === "failed" ? `This brief failed${failure}; what changed is listed above.` : "Looking for what changed…";
        this.show(null, element("p", "brief-note", line));
      }
    }

    show(view, node = view.root) {
      if (this.view) this.view.removeFigures();
      this.view = view;
      this.body.replaceChildren(node);
    }

    title() {
      return `${state.selected ? state.selected.name : "Watchlist"} brief, ${briefWindow(this.brief)}`;
    }

    close() {
      if (this.follower) this.follower.detach();
      if (this.view) this.view.removeFigures();
      this.opened = false;
      this.follower = null;
      this.view = null;
      this.shownStatus = null;
      this.body.replaceChildren();
      this.body.hidden = true;
      this.toggle.setAttribute("aria-expanded", "false");
      this.toggle.textContent = "Show the brief";
    }

    discard() {
      clearTimeout(this.pollTimer);
      this.close();
      this.root.remove();
    }
  }

  function clearBriefs() {
    for (const item of state.items.values()) item.discard();
    state.items.clear();
    els.briefsEmpty.hidden = true;
  }

  /** The open watchlist's briefs, newest first: new ones are added, known ones updated (an open answer
   * stays open), in the API's order. */
  async function loadBriefs() {
    const watchlist = state.selected;
    clearTimeout(state.refreshTimer);
    let briefs;
    try {
      briefs = await api(`/api/watchlists/${watchlist.id}/briefs`);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      els.note.textContent = `Could not load the briefs: ${describe(error)}`;
      return;
    }
    if (state.selected !== watchlist) return; // another was picked while we asked
    for (const brief of briefs) {
      let item = state.items.get(brief.id);
      if (item) item.update(brief);
      else state.items.set(brief.id, (item = new BriefItem(brief)));
      els.briefs.append(item.root);
    }
    els.briefsEmpty.hidden = briefs.length > 0;
    state.refreshTimer = setTimeout(() => {
      if (!els.panel.hidden && state.selected === watchlist) loadBriefs();
    }, LIST_REFRESH_MS);
  }

  /** Brief now: the new brief goes first and opens, so one being written is followed as it is written. */
  async function briefNow() {
    const watchlist = state.selected;
    els.briefNow.disabled = true;
    els.note.textContent = "Looking for what changed…";
    try {
      const accepted = await api(`/api/watchlists/${watchlist.id}/briefs`, { method: "POST" });
      const brief = await api(`/api/briefs/${accepted.brief_id}`);
      if (state.selected !== watchlist) return;
      const item = new BriefItem(brief);
      state.items.set(brief.id, item);
      els.briefs.prepend(item.root);
      els.briefsEmpty.hidden = true;
      els.note.textContent = "";
      item.open();
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      els.note.textContent = `No brief was made: ${describe(error)}`;
    } finally {
      els.briefNow.disabled = false;
    }
  }

  // --- the panel --------------------------------------------------------------------------------------------

  /** The panel takes the conversation's place; a conversation, a new chat or the toggle gives it back. */
  function showPanel(shown) {
    els.panel.hidden = !shown;
    for (const part of els.chat) part.hidden = shown;
    els.toggle.setAttribute("aria-pressed", String(shown));
    if (!shown) return;
    if (state.selected) loadBriefs();
    loadWatchlists();
  }

  fillForm(null);
  els.toggle.addEventListener("click", () => showPanel(els.panel.hidden));
  byId("new-chat").addEventListener("click", () => showPanel(false));
  byId("conversations").addEventListener("click", (event) => {
    if (event.target.closest("button")) showPanel(false);
  });
  els.newButton.addEventListener("click", startNew);
  els.form.addEventListener("submit", save);
  els.briefNow.addEventListener("click", briefNow);
  els.remove.addEventListener("click", remove);
})();
