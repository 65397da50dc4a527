/*
 * The chat page. No build step: plain browser JavaScript over the JSON API and the run's SSE stream.
 *
 * Safety: answer text comes from a model that read the web, so it is untrusted. It is rendered with
 * marked (raw HTML escaped, shown as text), sanitized with DOMPurify into a DOM fragment, and only then
 * are `[n]` markers turned into links, built as elements (never as HTML strings) and only for absolute
 * http(s) URLs. The page's Content-Security-Policy forbids inline script as a second line of defence.
 *
 * Resuming: EventSource reconnects by itself and sends Last-Event-ID. Each run event's id ends in a
 * sequence number; events at or below the last one shown are ignored, so a replay never duplicates text.
 */
(() => {
  "use strict";

  const PHASES = ["analyzing", "researching", "evaluating", "synthesizing"];
  const RUN_EVENTS = ["status", "plan", "step", "round", "delta", "sources", "done", "error"];
  const STEP_STATES = { started: "running", done: "done", failed: "failed", fallback: "fell back to web search" };
  const RECONNECT_DELAYS_MS = [500, 1000, 2000, 4000, 8000];
  const MAX_RECONNECTS = 12;
  const ACTIVE_RUN_KEY = "chat.activeRun";
  const PURIFY_OPTIONS = {
    USE_PROFILES: { html: true },
    FORBID_TAGS: ["img", "style", "form", "input", "button", "textarea", "select", "iframe"],
    FORBID_ATTR: ["style"],
    RETURN_DOM_FRAGMENT: true,
  };

  const els = {
    conversations: document.getElementById("conversations"),
    newChat: document.getElementById("new-chat"),
    transcript: document.getElementById("transcript"),
    form: document.getElementById("ask-form"),
    question: document.getElementById("question"),
    mode: document.getElementById("mode"),
    ask: document.getElementById("ask"),
    cancel: document.getElementById("cancel"),
    formError: document.getElementById("form-error"),
  };

  const state = { conversationId: null, follower: null };

  // --- the JSON API --------------------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  async function api(path, { method = "GET", body } = {}) {
    const headers = { Accept: "application/json" };
    if (method !== "GET") headers["X-CSRFToken"] = csrfToken();
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(path, {
      method,
      headers,
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const payload = await response.json().catch(() => null);
    if (!response.ok) {
      const error = (payload && payload.error) || {};
      throw new ApiError(response.status, error.code || `http_${response.status}`, error.message || response.statusText);
    }
    return payload;
  }

  /** The asker's time zone, so "today" and "last quarter" are theirs; null when the browser cannot say. */
  function browserTimeZone() {
    try {
      return Intl.DateTimeFormat().resolvedOptions().timeZone || null;
    } catch {
      return null;
    }
  }

  // --- safe rendering -------------------------------------------------------------------------------------

  /** The URL if it is absolute http(s), else null: no javascript:, data: or relative links from answers. */
  function httpUrl(value) {
    try {
      const url = new URL(value);
      return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
    } catch {
      return null;
    }
  }

  function escapeHtml(text) {
    const entities = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
    return text.replace(/[&<>"']/g, (character) => entities[character]);
  }

  // Raw HTML in an answer is shown as text, never parsed: the model writes markdown, and markup it copies
  // from a web page is not ours to render. DOMPurify then vets what markdown itself produces (link URLs).
  const markdown = new marked.Marked({
    gfm: true,
    async: false,
    renderer: { html: ({ text }) => escapeHtml(text) },
  });

  DOMPurify.addHook("afterSanitizeAttributes", (node) => {
    if (node.tagName !== "A") return;
    const href = node.getAttribute("href");
    if (href === null || httpUrl(href) === null) {
      node.removeAttribute("href");
      return;
    }
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  });

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function externalLink(url, text, className) {
    const link = element("a", className, text);
    link.href = url;
    link.target = "_blank";
    link.rel = "noopener noreferrer";
    return link;
  }

  function citation(n, source) {
    const url = source ? httpUrl(source.url) : null;
    if (url === null) return element("span", "citation", `[${n}]`);
    const link = externalLink(url, `[${n}]`, "citation");
    link.title = source.title;
    return link;
  }

  /** Replace `[n]` markers in text nodes (outside links and code) with citation links. */
  function linkCitations(root, sources) {
    const byNumber = new Map(sources.map((source) => [source.n, source]));
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
      acceptNode: (node) =>
        node.parentElement && node.parentElement.closest("a, code, pre")
          ? NodeFilter.FILTER_REJECT
          : NodeFilter.FILTER_ACCEPT,
    });
    const textNodes = [];
    while (walker.nextNode()) textNodes.push(walker.currentNode);
    for (const node of textNodes) {
      const text = node.nodeValue;
      const marker = /\[(\d{1,3})\]/g;
      const pieces = [];
      let from = 0;
      for (let match = marker.exec(text); match !== null; match = marker.exec(text)) {
        pieces.push(document.createTextNode(text.slice(from, match.index)));
        pieces.push(citation(Number(match[1]), byNumber.get(Number(match[1]))));
        from = match.index + match[0].length;
      }
      if (pieces.length === 0) continue;
      pieces.push(document.createTextNode(text.slice(from)));
      node.replaceWith(...pieces);
    }
  }

  function renderAnswer(target, text, sources) {
    const fragment = DOMPurify.sanitize(markdown.parse(text), PURIFY_OPTIONS);
    linkCitations(fragment, sources);
    target.replaceChildren(fragment);
  }

  function renderSources(panel, sources) {
    const list = panel.querySelector("ol");
    list.replaceChildren(
      ...sources.map((source) => {
        const item = element("li");
        item.value = source.n;
        const url = httpUrl(source.url);
        item.append(url === null ? element("span", "", source.title) : externalLink(url, source.title || url));
        item.append(element("span", "source-kind", source.kind === "market_data" ? "market data" : "web"));
        return item;
      }),
    );
    panel.hidden = sources.length === 0;
  }

  // --- one assistant turn ---------------------------------------------------------------------------------

  /** The DOM of one answer: phases, sub-question progress, the streamed text, sources, errors. */
  class AnswerView {
    constructor() {
      this.text = "";
      this.sources = [];
      this.renderQueued = false;
      this.root = element("article", "turn assistant");
      this.root.dataset.state = "running";
      this.progress = element("div", "progress");
      this.connection = element("p", "connection");
      this.answer = element("div", "answer");
      this.sourcesPanel = element("aside", "sources");
      this.sourcesPanel.append(element("h3", "", "Sources"), element("ol"));
      this.sourcesPanel.hidden = true;
      this.error = element("p", "run-error");
      this.error.hidden = true;
      this.root.append(this.progress, this.connection, this.answer, this.sourcesPanel, this.error);
    }

    static finished(message) {
      const view = new AnswerView();
      view.text = message.content;
      view.setSources(message.sources);
      view.root.dataset.state = message.status === "complete" ? "done" : "error";
      if (message.status !== "complete") view.showError("incomplete", "This answer was interrupted.");
      view.render();
      return view;
    }

    ensureProgress() {
      if (this.phases) return;
      this.phases = element("ol", "phases");
      for (const phase of PHASES) {
        const item = element("li", "", phase);
        item.dataset.phase = phase;
        this.phases.append(item);
      }
      this.phaseLabel = element("p", "phase-label");
      this.steps = element("ol", "steps");
      this.rounds = element("ul", "rounds");
      this.progress.append(this.phases, this.phaseLabel, this.steps, this.rounds);
    }

    setStatus({ phase, label, detail }) {
      this.ensureProgress();
      const current = PHASES.indexOf(phase);
      this.phases.querySelectorAll("li").forEach((item, index) => {
        item.classList.toggle("current", index === current);
        item.classList.toggle("passed", current >= 0 && index < current);
      });
      this.phaseLabel.textContent = detail ? `${label} — ${detail}` : label;
      this.root.dataset.phase = phase;
    }

    stepItem(id) {
      let item = this.steps.querySelector(`li[data-sub-question-id="${CSS.escape(id)}"]`);
      if (item === null) {
        item = element("li");
        item.dataset.subQuestionId = id;
        item.dataset.state = "pending";
        item.append(element("span", "step-question", id), element("span", "step-state", "pending"));
        this.steps.append(item);
      }
      return item;
    }

    setPlan({ sub_questions: subQuestions }) {
      this.ensureProgress();
      for (const subQuestion of subQuestions) {
        this.stepItem(subQuestion.id).querySelector(".step-question").textContent = subQuestion.question;
      }
    }

    setStep({ sub_question_id: id, state }) {
      this.ensureProgress();
      const item = this.stepItem(id);
      item.dataset.state = state;
      item.querySelector(".step-state").textContent = STEP_STATES[state] || state;
    }

    addRound({ n, complete, gaps }) {
      this.ensureProgress();
      let summary = "complete";
      if (!complete) summary = gaps.length ? `gaps: ${gaps.join("; ")}` : "more research needed";
      this.rounds.append(element("li", "", `Round ${n}: ${summary}`));
    }

    appendText(text) {
      this.text += text;
      if (this.renderQueued) return;
      this.renderQueued = true;
      requestAnimationFrame(() => {
        this.renderQueued = false;
        this.render();
      });
    }

    setSources(sources) {
      this.sources = sources;
      renderSources(this.sourcesPanel, sources);
      this.render();
    }

    render() {
      renderAnswer(this.answer, this.text, this.sources);
    }

    setConnection(message) {
      this.connection.textContent = message;
    }

    showError(code, message) {
      this.root.dataset.errorCode = code;
      this.error.textContent = code === "cancelled" ? "Cancelled." : message;
      this.error.hidden = false;
    }

    finish() {
      this.setConnection("");
      this.render();
      this.root.dataset.state = "done";
    }

    fail(code, message) {
      this.setConnection("");
      this.render();
      this.root.dataset.state = "error";
      this.showError(code, message);
    }
  }

  // --- following a run's events ---------------------------------------------------------------------------

  /** The sequence number of a run event id like `run-<uuid>:7`. */
  function eventSequence(lastEventId) {
    const match = /:(\d+)$/.exec(lastEventId || "");
    return match ? Number(match[1]) : null;
  }

  class RunFollower {
    constructor({ runId, eventsUrl, view, onEnd }) {
      this.runId = runId;
      this.eventsUrl = eventsUrl;
      this.view = view;
      this.onEnd = onEnd;
      this.lastSeen = 0;
      this.reconnects = 0;
      this.ended = false;
      this.source = null;
      this.retryTimer = null;
    }

    open() {
      const url = this.lastSeen > 0
        ? `${this.eventsUrl}?lastEventId=${encodeURIComponent(`run-${this.runId}:${this.lastSeen}`)}`
        : this.eventsUrl;
      const source = new EventSource(url);
      this.source = source;
      source.onopen = () => {
        this.reconnects = 0;
        this.view.setConnection("");
      };
      source.onerror = () => this.onError(source);
      for (const type of RUN_EVENTS) source.addEventListener(type, (event) => this.onEvent(type, event));
      source.addEventListener("stream-reset", () =>
        this.end("stream_reset", "The live events of this answer have expired; reload the conversation."),
      );
    }

    onEvent(type, event) {
      // The run's `error` event shares its name with EventSource's own connection errors (plain Events).
      if (!(event instanceof MessageEvent)) return;
      const sequence = eventSequence(event.lastEventId);
      if (sequence !== null) {
        if (sequence <= this.lastSeen) return; // replayed after a reconnect: already shown
        this.lastSeen = sequence;
      }
      const data = event.data ? JSON.parse(event.data) : {};
      const view = this.view;
      switch (type) {
        case "status": view.setStatus(data); break;
        case "plan": view.setPlan(data); break;
        case "step": view.setStep(data); break;
        case "round": view.addRound(data); break;
        case "delta": view.appendText(data.text); break;
        case "sources": view.setSources(data.sources); break;
        case "done": this.end(null); break;
        case "error": this.end(data.code, data.message); break;
      }
    }

    onError(source) {
      if (this.ended || source !== this.source) return;
      this.view.setConnection("Connection lost — reconnecting…");
      // CONNECTING: the browser retries by itself, sending Last-Event-ID. CLOSED: it has given up
      // (an HTTP error, e.g. a restarting server), so retry with backoff from the last event shown.
      if (source.readyState !== EventSource.CLOSED) return;
      if (this.reconnects >= MAX_RECONNECTS) {
        this.end("connection_lost", "Lost the connection to the server. Reload the page to see the answer.");
        return;
      }
      const delay = RECONNECT_DELAYS_MS[Math.min(this.reconnects, RECONNECT_DELAYS_MS.length - 1)];
      this.reconnects += 1;
      this.retryTimer = setTimeout(() => this.open(), delay);
    }

    cancel() {
      return api(`/api/runs/${this.runId}/cancel`, { method: "POST" }).catch((error) => {
        if (error.code !== "run_finished") throw error;
      });
    }

    end(code, message) {
      if (this.ended) return;
      this.ended = true;
      clearTimeout(this.retryTimer);
      if (this.source) this.source.close();
      if (code === null) this.view.finish();
      else this.view.fail(code, message);
      this.onEnd(this);
    }

    /** Stop listening without ending the run (switching conversations); the answer is stored anyway. */
    detach() {
      this.ended = true;
      clearTimeout(this.retryTimer);
      if (this.source) this.source.close();
    }
  }

  // --- the page -------------------------------------------------------------------------------------------

  function showFormError(message) {
    els.formError.textContent = message;
    els.formError.hidden = !message;
  }

  function setRunning(running) {
    els.ask.disabled = running;
    els.cancel.hidden = !running;
    els.cancel.disabled = false;
  }

  function appendUserTurn(content) {
    els.transcript.querySelector(".empty-state")?.remove();
    const turn = element("article", "turn user");
    turn.append(element("div", "bubble", content));
    els.transcript.append(turn);
  }

  function appendAssistantTurn(view) {
    els.transcript.querySelector(".empty-state")?.remove();
    els.transcript.append(view.root);
    view.root.scrollIntoView({ block: "end" });
  }

  function follow(runId, eventsUrl) {
    const view = new AnswerView();
    view.root.dataset.runId = runId;
    appendAssistantTurn(view);
    const follower = new RunFollower({
      runId,
      eventsUrl,
      view,
      onEnd: (ended) => {
        if (state.follower !== ended) return;
        state.follower = null;
        sessionStorage.removeItem(ACTIVE_RUN_KEY);
        setRunning(false);
        loadConversations();
      },
    });
    state.follower = follower;
    sessionStorage.setItem(
      ACTIVE_RUN_KEY,
      JSON.stringify({ conversationId: state.conversationId, runId, eventsUrl }),
    );
    setRunning(true);
    follower.open();
  }

  function stopFollowing() {
    if (state.follower) state.follower.detach();
    state.follower = null;
    setRunning(false);
  }

  async function loadConversations() {
    let conversations;
    try {
      conversations = await api("/api/conversations");
    } catch (error) {
      showFormError(`Could not load conversations: ${error.message}`);
      return;
    }
    els.conversations.replaceChildren(
      ...conversations.map((conversation) => {
        const item = element("li");
        const button = element("button", "", conversation.title || "Untitled");
        button.type = "button";
        button.dataset.conversationId = conversation.id;
        button.setAttribute("aria-current", String(conversation.id === state.conversationId));
        button.addEventListener("click", () => openConversation(conversation.id));
        item.append(button);
        return item;
      }),
    );
  }

  async function openConversation(id) {
    stopFollowing();
    showFormError("");
    let conversation;
    try {
      conversation = await api(`/api/conversations/${id}`);
    } catch (error) {
      showFormError(`Could not open the conversation: ${error.message}`);
      return;
    }
    state.conversationId = conversation.id;
    els.transcript.replaceChildren();
    for (const message of conversation.messages) {
      if (message.role === "user") appendUserTurn(message.content);
      else appendAssistantTurn(AnswerView.finished(message));
    }
    for (const button of els.conversations.querySelectorAll("button")) {
      button.setAttribute("aria-current", String(button.dataset.conversationId === id));
    }
    await resumeActiveRun(id);
  }

  /** After a reload, pick up the run this tab was following, replaying its stored events from the start. */
  async function resumeActiveRun(conversationId) {
    const active = JSON.parse(sessionStorage.getItem(ACTIVE_RUN_KEY) || "null");
    if (!active || active.conversationId !== conversationId) return;
    try {
      const run = await api(`/api/runs/${active.runId}`);
      if (state.conversationId !== conversationId) return; // the user moved on while we asked
      if (run.status === "queued" || run.status === "running") {
        follow(active.runId, active.eventsUrl);
        return;
      }
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
    }
    sessionStorage.removeItem(ACTIVE_RUN_KEY);
  }

  function newChat() {
    stopFollowing();
    state.conversationId = null;
    els.transcript.replaceChildren(element("p", "empty-state", "Ask a new question."));
    for (const button of els.conversations.querySelectorAll("button")) button.setAttribute("aria-current", "false");
    els.question.focus();
  }

  async function ask(event) {
    event.preventDefault();
    const content = els.question.value.trim();
    if (!content || state.follower) return;
    showFormError("");
    els.ask.disabled = true;
    try {
      if (state.conversationId === null) {
        state.conversationId = (await api("/api/conversations", { method: "POST", body: {} })).id;
      }
      const accepted = await api(`/api/conversations/${state.conversationId}/messages`, {
        method: "POST",
        body: { content, mode: els.mode.value, timezone: browserTimeZone() },
      });
      els.question.value = "";
      appendUserTurn(content);
      follow(accepted.run_id, accepted.events_url);
      loadConversations();
    } catch (error) {
      showFormError(error.message);
      els.ask.disabled = false;
    }
  }

  async function cancel() {
    if (!state.follower) return;
    els.cancel.disabled = true;
    try {
      await state.follower.cancel();
    } catch (error) {
      showFormError(`Could not cancel: ${error.message}`);
      els.cancel.disabled = false;
    }
  }

  els.form.addEventListener("submit", ask);
  els.question.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.metaKey || event.ctrlKey)) els.form.requestSubmit();
  });
  els.cancel.addEventListener("click", cancel);
  els.newChat.addEventListener("click", newChat);

  (async () => {
    await loadConversations();
    const active = JSON.parse(sessionStorage.getItem(ACTIVE_RUN_KEY) || "null");
    if (active && active.conversationId) await openConversation(active.conversationId);
  })();
})();
