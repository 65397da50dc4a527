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
 *
 * Layout: only the transcript scrolls; the question box stays at the bottom of the window. Each answer
 * is a stack of sections (the research process, the figures, the text, the sources, the error line, the
 * suggested next questions, the export buttons), and a trust line above the text (the confidence badge,
 * contradictions); citation marks and flagged numbers are put on the rendered text after each render.
 *
 * Other scripts, loaded before this one: dom.js (element helpers), figures.js (charts and tables of the
 * run's market data), trust.js (confidence, contradictions, citation and number marks), export.js
 * (Markdown, report and CSV exports).
 */
(() => {
  "use strict";

  const { httpUrl, element, button, externalLink, download, replaceMatches } = window.ChatDom;
  const { Figure } = window.ChatFigures;
  const { answerMarkdown, reportMarkdown, chartCsv, fileStem, filingDetails } = window.ChatExport;
  const Trust = window.ChatTrust;

  const PHASES = ["analyzing", "researching", "evaluating", "synthesizing"];
  const RUN_EVENTS = ["status", "plan", "step", "round", "attempt", "chart", "delta", "sources", "verification", "done", "error"];
  const STEP_STATES = {
    pending: "pending",
    started: "running",
    done: "done",
    failed: "failed",
    fallback: "fell back to web search",
    stopped: "not finished",
  };
  // Analytical sub-questions (route "synthesis") get no step events: the answer itself answers them, so
  // their state follows the answer (pending until it starts, done when the run is done).
  const SYNTHESIS_STATES = {
    pending: "pending: answered in the synthesis",
    started: "being answered in the synthesis",
    done: "answered in the synthesis",
    stopped: "not finished",
  };
  const ROUTE_LABELS = { market_data: "market data", web_search: "web", synthesis: "analysis" };
  const DOMAIN_LABELS = {
    regulator: "regulator",
    exchange: "exchange",
    company_ir: "company IR",
    government: "government",
    academic: "academic",
    major_news: "major news",
    blog: "blog",
    other: "other",
  };
  const FINISHED_STEP_STATES = new Set(["done", "failed", "fallback"]);
  const RECONNECT_DELAYS_MS = [500, 1000, 2000, 4000, 8000];
  const MAX_RECONNECTS = 12;
  const ACTIVE_RUN_KEY = "chat.activeRun";
  const END_OF_TRANSCRIPT_PX = 48; // this close to the end counts as reading the end
  const SHOW_COUNT_FROM_SHARE = 0.9; // the live character count appears at 90% of the limit
  const MAX_FOLLOW_UPS = 3;
  const ACTION_NOTE_MS = 4000; // how long "Copied." and the like stay next to the export buttons
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
    questionHint: document.getElementById("question-hint"),
    mode: document.getElementById("mode"),
    ask: document.getElementById("ask"),
    cancel: document.getElementById("cancel"),
    formError: document.getElementById("form-error"),
  };

  // The API's limit, rendered into the page by the server (one source of truth).
  const MAX_QUESTION_CHARS = Number(els.question.dataset.maxChars);
  const numbers = new Intl.NumberFormat("en");

  const state = {
    conversationId: null,
    follower: null,
    sending: false,
    askHeldUntil: 0, // after a 429, Ask waits out the server's Retry-After
    askHoldTimer: null,
    atTranscriptEnd: true, // the reader is at the end of the transcript: a growing answer keeps them there
    lastScrollTop: 0,
    answerViews: [], // of the transcript shown: their charts are let go when it is cleared
  };

  // --- the JSON API --------------------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, code, message, retryAfterS = null) {
      super(message);
      this.status = status;
      this.code = code;
      this.retryAfterS = retryAfterS;
    }
  }

  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  /** A Retry-After given in seconds (the API's form), or null. */
  function retryAfterSeconds(response) {
    const seconds = Number(response.headers.get("Retry-After"));
    return Number.isFinite(seconds) && seconds > 0 ? Math.ceil(seconds) : null;
  }

  /** One API call. Unsafe methods carry the CSRF token (the session cookie alone is not enough). */
  async function api(path, { method = "GET", body } = {}) {
    const headers = { Accept: "application/json" };
    if (method !== "GET") headers["X-CSRFToken"] = csrfToken();
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let response;
    try {
      response = await fetch(path, {
        method,
        headers,
        credentials: "same-origin",
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch {
      throw new ApiError(0, "unreachable", "Could not reach the server. Check the connection and try again.");
    }
    const payload = await response.json().catch(() => null);
    if (!response.ok) {
      const error = payload && payload.error;
      if (!error) {
        // Not the API's JSON (a proxy's error page, say): say what happened in plain words.
        const status = `${response.status}${response.statusText ? ` ${response.statusText}` : ""}`;
        throw new ApiError(response.status, `http_${response.status}`, `The server answered ${status}. Try again in a moment.`);
      }
      throw new ApiError(response.status, error.code, error.message, retryAfterSeconds(response));
    }
    return payload;
  }

  /** The sentence the asker reads for a refused request. The API's messages are written for people;
   * the few that are not (a field path, an expired token) get the page's own words. */
  function describeApiError(error) {
    switch (error.code) {
      case "invalid_request":
        return `The question was not accepted (${error.message}).`;
      case "csrf_failed":
        return "This page's session has expired. Reload the page, then ask again.";
      case "request_too_large":
        return `The question is too long: the limit is ${numbers.format(MAX_QUESTION_CHARS)} characters.`;
      default:
        return error.message;
    }
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

  /** A `[n]` marker: a link to its source when that is http(s), else plain text. `data-n` lets marks
   * about the source (its verification, say) find every place it is cited. */
  function citation(n, source) {
    const url = source ? httpUrl(source.url) : null;
    const marker = url === null ? element("span", "citation", `[${n}]`) : externalLink(url, `[${n}]`, "citation");
    if (url !== null) marker.title = source.title;
    marker.dataset.n = String(n);
    return marker;
  }

  /** Replace `[n]` markers in text nodes (outside links and code) with citation links. */
  function linkCitations(root, sources) {
    const byNumber = new Map(sources.map((source) => [source.n, source]));
    replaceMatches(root, /\[(\d{1,3})\]/g, "a, code, pre", (match) =>
      citation(Number(match[1]), byNumber.get(Number(match[1]))),
    );
  }

  function renderAnswer(target, text, sources) {
    const fragment = DOMPurify.sanitize(markdown.parse(text), PURIFY_OPTIONS);
    linkCitations(fragment, sources);
    target.replaceChildren(fragment);
  }

  /** "market data, as of 2025-06-30", "web · regulator · published 2025-01-02" or
   * "SEC filing · 10-Q · Q1 FY2025 · filed 2025-01-31". */
  function sourceKind(source) {
    if (source.kind === "market_data") return source.as_of ? `market data, as of ${source.as_of}` : "market data";
    if (source.kind === "filing") return ["SEC filing", ...filingDetails(source)].join(" · ");
    const parts = ["web"];
    if (source.domain_type) parts.push(DOMAIN_LABELS[source.domain_type] || source.domain_type);
    if (source.published) parts.push(`published ${source.published}`);
    return parts.join(" · ");
  }

  /** The numbered source list; entry n has the id `<idPrefix>-source-<n>`, for links from figures.
   * `verdicts` (from the verification, by n) add each source's citation checks. */
  function renderSources(panel, sources, idPrefix, verdicts = new Map()) {
    const list = panel.querySelector("ol");
    list.replaceChildren(
      ...sources.map((source) => {
        const item = element("li");
        item.value = source.n;
        item.id = `${idPrefix}-source-${source.n}`;
        const url = httpUrl(source.url);
        item.append(url === null ? element("span", "", source.title) : externalLink(url, source.title || url));
        item.append(element("span", "source-kind", sourceKind(source)));
        const verdict = verdicts.get(source.n);
        if (verdict) item.append(element("span", `source-verification ${verdict.worst}`, verdict.text));
        return item;
      }),
    );
    panel.hidden = sources.length === 0;
  }

  // --- one assistant turn ---------------------------------------------------------------------------------

  function plural(count, noun) {
    return `${count} ${noun}${count === 1 ? "" : "s"}`;
  }

  /** The research process of one answer (phases, the plan's sub-questions and their states, rounds) as a
   * panel: open while research runs, closed when the answer starts, opened again on demand. Its summary
   * line says what the research took, e.g. "Research: 2 rounds, 5 sub-questions". */
  class ProcessPanel {
    constructor() {
      this.rounds = 0;
      this.answering = false;
      this.running = true;
      this.label = "";
      this.root = element("details", "process");
      this.root.open = true;
      this.root.hidden = true; // until the run says something about its process
      this.summary = element("summary", "process-summary");
      this.phases = element("ol", "phases");
      for (const phase of PHASES) {
        const item = element("li", "", phase);
        item.dataset.phase = phase;
        this.phases.append(item);
      }
      this.phaseLabel = element("p", "phase-label");
      this.steps = element("ol", "steps");
      this.roundList = element("ul", "rounds");
      this.attemptNote = element("p", "attempt-note");
      this.attemptNote.hidden = true;
      this.contradictions = element("section", "contradictions");
      this.contradictions.setAttribute("aria-label", "Contradictions between findings");
      this.contradictions.hidden = true;
      this.root.append(
        this.summary,
        this.phases,
        this.phaseLabel,
        this.steps,
        this.roundList,
        this.contradictions,
        this.attemptNote,
      );
    }

    setStatus({ phase, label, detail }) {
      const current = PHASES.indexOf(phase);
      this.phases.querySelectorAll("li").forEach((item, index) => {
        item.classList.toggle("current", index === current);
        item.classList.toggle("passed", current >= 0 && index < current);
      });
      this.phaseLabel.textContent = detail ? `${label} — ${detail}` : label;
      this.label = label;
      this.update();
    }

    stepItem(id) {
      let item = this.steps.querySelector(`li[data-sub-question-id="${CSS.escape(id)}"]`);
      if (item === null) {
        item = element("li");
        item.dataset.subQuestionId = id;
        item.dataset.state = "pending";
        item.append(
          element("span", "step-question", id),
          element("span", "step-route"),
          element("span", "step-state"),
          element("span", "step-time"),
        );
        this.steps.append(item);
      }
      return item;
    }

    /** Plans are cumulative (a later round's plan lists the earlier sub-questions too): merge by id. */
    setPlan({ sub_questions: subQuestions }) {
      for (const { id, question, route } of subQuestions) {
        const item = this.stepItem(id);
        item.querySelector(".step-question").textContent = question;
        item.dataset.route = route;
        this.showStepRoute(item);
        if (route === "synthesis" && this.answering) item.dataset.state = "started";
        this.showStepState(item);
      }
      this.update();
    }

    setStep({ sub_question_id: id, state, elapsed_ms: elapsedMs, model }) {
      const item = this.stepItem(id);
      item.dataset.state = state;
      if (model) {
        item.dataset.model = model;
        this.showStepRoute(item);
      }
      item.querySelector(".step-time").textContent = elapsedMs ? `${(elapsedMs / 1000).toFixed(1)} s` : "";
      this.showStepState(item);
      this.update();
    }

    /** The route, and for a web search step the model that answers it with its provider (`openai:gpt-5.4`). */
    showStepRoute(item) {
      const route = ROUTE_LABELS[item.dataset.route] || item.dataset.route || "";
      item.querySelector(".step-route").textContent = item.dataset.model ? `${route} · ${item.dataset.model}` : route;
    }

    showStepState(item) {
      const states = item.dataset.route === "synthesis" ? SYNTHESIS_STATES : STEP_STATES;
      item.querySelector(".step-state").textContent = states[item.dataset.state] || item.dataset.state;
    }

    /** Move every analytical step in state `from` to `to` (they follow the answer, not step events). */
    moveSynthesisSteps(from, to) {
      for (const item of this.steps.querySelectorAll('li[data-route="synthesis"]')) {
        if (item.dataset.state !== from) continue;
        item.dataset.state = to;
        this.showStepState(item);
      }
    }

    addRound({ n, complete, gaps, weak_areas: weakAreas = [], stop_reason: stopReason }) {
      let summary = "complete";
      if (!complete) summary = gaps.length ? `gaps: ${gaps.join("; ")}` : "more research needed";
      const details = [];
      if (weakAreas.length) details.push(`weak: ${weakAreas.join("; ")}`);
      if (stopReason) details.push(`stopped: ${stopReason.replace(/_/g, " ")}`);
      const line = details.length ? `Round ${n}: ${summary} (${details.join(" · ")})` : `Round ${n}: ${summary}`;
      this.roundList.append(element("li", "", line));
      this.rounds += 1;
      this.update();
    }

    /** The contradictions found so far, each with both claims and the findings making them. */
    setContradictions(items) {
      const list = element("ul");
      list.append(...items.map((item) => element("li", "", Trust.contradictionText(item))));
      this.contradictions.replaceChildren(element("h4", "", "Contradictions"), list);
      this.contradictions.hidden = items.length === 0;
      this.update();
    }

    /** Open the panel at its contradictions (from the flag near the answer). */
    showContradictions() {
      this.root.open = true;
      this.contradictions.scrollIntoView({ block: "nearest" });
    }

    /** The answer's first text: the process steps aside for it. */
    answerStarted() {
      if (this.answering) return;
      this.answering = true;
      this.root.open = false;
      this.moveSynthesisSteps("pending", "started");
      this.update();
    }

    /** Another worker resumed the run: its answer is written again, so the process shows until it starts. */
    restart({ n }) {
      this.answering = false;
      this.root.open = true;
      this.moveSynthesisSteps("started", "pending");
      this.attemptNote.textContent = `Resumed (attempt ${n}): the answer is being written again.`;
      this.attemptNote.hidden = false;
      this.update();
    }

    finish() {
      this.running = false;
      this.moveSynthesisSteps("started", "done");
      this.moveSynthesisSteps("pending", "done");
      this.update();
    }

    /** The run ended without an answer (an error, a cancel): nothing still open is left looking busy. */
    stop() {
      this.running = false;
      for (const item of this.steps.querySelectorAll("li")) {
        if (FINISHED_STEP_STATES.has(item.dataset.state)) continue;
        item.dataset.state = "stopped";
        this.showStepState(item);
      }
      this.update();
    }

    update() {
      const counts = [];
      if (this.rounds) counts.push(plural(this.rounds, "round"));
      if (this.steps.children.length) counts.push(plural(this.steps.children.length, "sub-question"));
      // With no plan (one web search), the phase's own words say how the answer was found.
      const totals = counts.length ? `Research: ${counts.join(", ")}` : this.label || "Research";
      const live = this.running && !this.answering && counts.length && this.label;
      this.summary.textContent = live ? `${totals} · ${this.label}` : totals;
      this.root.hidden = this.label === "" && this.steps.children.length === 0 && this.contradictions.hidden;
    }
  }

  let answersShown = 0; // numbers the answers on the page: ids for their sources, which figures link to

  /** Suggested next questions: what the last research round left open. Its follow-ups are questions as
   * they stand; its gaps are short phrases, asked as "Dig deeper: <gap>" (the conversation so far goes
   * with the question, so the model knows what it refers to). No model call is made to word them. */
  function followUpsOf(round) {
    if (round === null) return [];
    const questions = [...round.follow_ups, ...round.gaps.map((gap) => `Dig deeper: ${gap}`)];
    return [...new Set(questions)].slice(0, MAX_FOLLOW_UPS);
  }

  /** The DOM of one answer: its process panel, figures, the streamed text, sources, errors, follow-ups
   * and export buttons. `runId` is known for answers followed live and for stored answers of a run (their
   * report comes from the run). `askNext` false leaves out the suggested next questions (a watchlist's
   * brief is not a conversation to ask them in). */
  class AnswerView {
    constructor({ runId = null, question = "", askNext = true } = {}) {
      this.runId = runId;
      this.question = question;
      this.askNext = askNext;
      answersShown += 1;
      this.idPrefix = `answer-${answersShown}`;
      this.text = "";
      this.sources = [];
      this.figures = new Map(); // chart id -> Figure, in the order the charts came
      this.lastRound = null;
      this.confidence = null; // the last round's, then the stored run's (null for quick answers)
      this.contradictionsSeen = [];
      this.verification = []; // the citation checks, once the `verification` event has come
      this.flagged = []; // figures the run's number check could not trace to market data
      this.renderQueued = false;
      this.root = element("article", "turn assistant");
      this.root.dataset.state = "running";
      this.process = new ProcessPanel();
      this.connection = element("p", "connection");
      this.figuresBox = element("section", "figures");
      this.figuresBox.setAttribute("aria-label", "Figures");
      this.figuresBox.hidden = true;
      this.trustLine = element("div", "trust");
      this.trustLine.hidden = true;
      this.answer = element("div", "answer");
      this.sourcesPanel = element("aside", "sources");
      this.sourcesPanel.append(element("h3", "", "Sources"), element("ol"));
      this.sourcesPanel.hidden = true;
      this.error = element("p", "run-error");
      this.error.hidden = true;
      this.followUps = element("section", "follow-ups");
      this.followUps.setAttribute("aria-label", "Suggested next questions");
      this.followUps.hidden = true;
      this.actions = this.exportButtons();
      this.actions.hidden = true;
      this.root.append(
        this.process.root,
        this.connection,
        this.figuresBox,
        this.trustLine,
        this.answer,
        this.sourcesPanel,
        this.error,
        this.followUps,
        this.actions,
      );
    }

    /** A stored answer of a reopened conversation; `question` is the message it answers. One with a run
     * draws what the run kept of its events (charts, confidence, checks) as the live path does. */
    static finished(message, question = "", options = {}) {
      const view = new AnswerView({ runId: message.run_id ?? null, question, ...options });
      view.text = message.content;
      view.setSources(message.sources);
      view.root.dataset.state = message.status === "complete" ? "done" : "error";
      if (message.status !== "complete") view.showError("incomplete", "This answer was interrupted.");
      view.render();
      view.actions.hidden = view.text === "";
      if (view.runId !== null) {
        view.root.dataset.runId = view.runId;
        view.loadRunTrust();
      }
      return view;
    }

    exportButtons() {
      const actions = element("div", "answer-actions");
      const copy = button("copy-markdown", "Copy as Markdown", "Copy the answer and its numbered sources");
      copy.addEventListener("click", () => this.copyMarkdown());
      actions.append(copy);
      if (this.runId !== null) {
        const report = button("download-report", "Download report", "The answer, sources, figures, research trace and facts, as Markdown");
        report.addEventListener("click", () => this.downloadReport());
        actions.append(report);
      }
      this.actionNote = element("span", "action-note");
      this.actionNote.setAttribute("role", "status");
      actions.append(this.actionNote);
      return actions;
    }

    noteAction(message) {
      this.actionNote.textContent = message;
      clearTimeout(this.actionNoteTimer);
      this.actionNoteTimer = setTimeout(() => { this.actionNote.textContent = ""; }, ACTION_NOTE_MS);
    }

    async copyMarkdown() {
      try {
        await navigator.clipboard.writeText(answerMarkdown(this.text, this.sources));
        this.noteAction("Copied.");
      } catch {
        this.noteAction("The browser did not allow copying to the clipboard.");
      }
    }

    async downloadReport() {
      let run;
      try {
        run = await api(`/api/runs/${this.runId}`);
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        this.noteAction(`Could not load the run for the report: ${describeApiError(error)}`);
        return;
      }
      const report = reportMarkdown({
        question: this.question,
        text: this.text,
        sources: this.sources,
        charts: [...this.figures.values()].map((figure) => figure.chart),
        run,
        verification: this.verification.length ? this.verification : run.verification,
        exportedAt: new Date().toISOString(),
      });
      download(`${fileStem(this.question || "research")}-report.md`, "text/markdown;charset=utf-8", report);
    }

    downloadCsv(chart) {
      download(`${fileStem(chart.title)}.csv`, "text/csv;charset=utf-8", chartCsv(chart, this.sources));
    }

    /** `[n]` next to a figure's series: a link to source n in this answer's list (which may come later). */
    sourceLink(n) {
      const link = element("a", "source-ref", `[${n}]`);
      link.href = `#${this.idPrefix}-source-${n}`;
      link.dataset.n = String(n);
      const source = this.sources.find((known) => known.n === n);
      if (source) link.title = source.title;
      return link;
    }

    /** A `chart` event. A chart that comes again (same id) replaces the one shown. */
    addChart(chart) {
      const figure = new Figure(chart, { sourceLink: (n) => this.sourceLink(n), onCsv: (shown) => this.downloadCsv(shown) });
      const previous = this.figures.get(chart.id);
      if (previous) {
        previous.root.replaceWith(figure.root);
        previous.remove();
      } else {
        this.figuresBox.append(figure.root);
      }
      this.figures.set(chart.id, figure);
      this.figuresBox.hidden = false;
      figure.draw();
    }

    addRound(round) {
      this.lastRound = round;
      this.process.addRound(round);
      if (typeof round.confidence === "number") this.confidence = { score: round.confidence, shallow: round.shallow };
      if (round.contradictions && round.contradictions.length) {
        this.contradictionsSeen = Trust.mergeContradictions(this.contradictionsSeen, round.contradictions);
        this.process.setContradictions(this.contradictionsSeen);
      }
      this.showTrust();
    }

    /** The trust line above the text: the confidence badge and the flag for contradictions. */
    showTrust() {
      const parts = [];
      if (this.confidence !== null) parts.push(Trust.confidenceBadge(this.confidence));
      if (this.contradictionsSeen.length) {
        const count = this.contradictionsSeen.length;
        const flag = button("contradictions-flag", `⚠ ${plural(count, "contradiction")} between findings`, "Show them in the research process");
        flag.addEventListener("click", () => {
          state.atTranscriptEnd = false;
          this.process.showContradictions();
        });
        parts.push(flag);
      }
      this.trustLine.replaceChildren(...parts);
      this.trustLine.hidden = parts.length === 0;
    }

    /** The `verification` event: each citation's check, marked on the text and summed up per source. */
    setVerification(citations) {
      this.verification = citations;
      this.setSources(this.sources);
    }

    /** Once done, or when a stored answer is shown: the stored run's confidence (with its components and
     * threshold; null for a quick answer, which then shows no badge), its number check's flagged figures
     * and, if their events were missed (a reopened answer), its charts and verification. A failed look-up
     * leaves what the events showed. */
    async loadRunTrust() {
      let run;
      try {
        run = await api(`/api/runs/${this.runId}`);
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        return;
      }
      if (!this.root.isConnected) return; // the conversation was left while we asked
      if (this.figures.size === 0) for (const chart of run.charts) this.addChart(chart);
      this.confidence = run.confidence || null;
      this.flagged = Trust.flaggedValues(run.signals);
      if (this.verification.length === 0 && run.verification.length) this.verification = run.verification;
      this.showTrust();
      this.setSources(this.sources);
      this.root.dataset.trust = "loaded";
    }

    appendText(text) {
      if (text) this.process.answerStarted();
      this.text += text;
      if (this.renderQueued) return;
      this.renderQueued = true;
      requestAnimationFrame(() => {
        this.renderQueued = false;
        this.render();
      });
    }

    /** An `attempt` event: the text, figures and sources received so far are discarded; they come again. */
    restart(attempt) {
      this.text = "";
      this.verification = [];
      this.removeFigures();
      this.setSources([]);
      this.process.restart(attempt);
    }

    setSources(sources) {
      this.sources = sources;
      renderSources(this.sourcesPanel, sources, this.idPrefix, Trust.sourceVerdicts(this.verification));
      const titles = new Map(sources.map((source) => [String(source.n), source.title]));
      for (const link of this.figuresBox.querySelectorAll("a.source-ref")) link.title = titles.get(link.dataset.n) || "";
      this.render();
    }

    render() {
      renderAnswer(this.answer, this.text, this.sources);
      Trust.markCitations(this.answer, this.verification);
      Trust.markFlaggedNumbers(this.answer, this.flagged);
    }

    setConnection(message) {
      this.connection.textContent = message;
    }

    showError(code, message) {
      this.root.dataset.errorCode = code;
      this.error.textContent = code === "cancelled" ? "Cancelled." : message;
      this.error.hidden = false;
    }

    showFollowUps() {
      const questions = this.askNext ? followUpsOf(this.lastRound) : [];
      this.followUps.replaceChildren(
        element("h3", "", "Ask next"),
        ...questions.map((question) => {
          const ask = button("follow-up", question);
          ask.addEventListener("click", () => askFollowUp(question));
          return ask;
        }),
      );
      this.followUps.hidden = questions.length === 0;
    }

    finish() {
      this.setConnection("");
      this.render();
      this.process.finish();
      this.root.dataset.state = "done";
      this.showFollowUps();
      this.actions.hidden = false;
      if (this.runId !== null) this.loadRunTrust();
    }

    fail(code, message) {
      this.setConnection("");
      this.render();
      this.process.stop();
      this.root.dataset.state = "error";
      this.showError(code, message);
      this.actions.hidden = this.text === ""; // a partial answer can still be copied
    }

    removeFigures() {
      for (const figure of this.figures.values()) figure.remove();
      this.figures.clear();
      this.figuresBox.hidden = true;
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
        case "status": view.process.setStatus(data); break;
        case "plan": view.process.setPlan(data); break;
        case "step": view.process.setStep(data); break;
        case "round": view.addRound(data); break;
        case "attempt": view.restart(data); break;
        case "chart": view.addChart(data); break;
        case "delta": view.appendText(data.text); break;
        case "sources": view.setSources(data.sources); break;
        case "verification": view.setVerification(data.citations); break;
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

  // --- the transcript -------------------------------------------------------------------------------------

  // While the reader is at the end of the transcript, a growing answer keeps it there; once they scroll
  // up to read, it leaves them be until they come back down.
  function isAtTranscriptEnd() {
    const { scrollHeight, scrollTop, clientHeight } = els.transcript;
    return scrollHeight - scrollTop - clientHeight < END_OF_TRANSCRIPT_PX;
  }

  function scrollTranscriptToEnd() {
    els.transcript.scrollTop = els.transcript.scrollHeight;
    state.lastScrollTop = els.transcript.scrollTop;
    state.atTranscriptEnd = true;
  }

  const turnGrowth = new ResizeObserver(() => {
    if (state.atTranscriptEnd) scrollTranscriptToEnd();
  });

  function appendTurn(turn) {
    els.transcript.querySelector(".empty-state")?.remove();
    els.transcript.append(turn);
    turnGrowth.observe(turn);
  }

  function appendUserTurn(content) {
    const turn = element("article", "turn user");
    turn.append(element("div", "bubble", content));
    appendTurn(turn);
  }

  function appendAssistantTurn(view) {
    appendTurn(view.root);
    state.answerViews.push(view);
    // Opening the process panel by hand is reading it: stop following the answer, keep the panel in view.
    view.process.summary.addEventListener("click", () => {
      state.atTranscriptEnd = false;
      requestAnimationFrame(() => view.process.summary.scrollIntoView({ block: "nearest" }));
    });
  }

  function clearTranscript(...children) {
    for (const turn of els.transcript.children) turnGrowth.unobserve(turn);
    for (const view of state.answerViews) view.removeFigures();
    state.answerViews = [];
    els.transcript.replaceChildren(...children);
  }

  // --- the composer ---------------------------------------------------------------------------------------

  function showFormError(message, { aboutQuestion = false } = {}) {
    els.formError.textContent = message;
    els.formError.hidden = !message;
    els.formError.dataset.aboutQuestion = String(aboutQuestion && Boolean(message));
  }

  /** Characters as the API counts them: code points of the trimmed text (an emoji is one, not two). */
  function questionLength(content) {
    return Array.from(content).length;
  }

  function overLimitMessage(length) {
    return `${numbers.format(length)} characters — the limit is ${numbers.format(MAX_QUESTION_CHARS)}.`;
  }

  /** Why `content` (trimmed) cannot be asked, or null: the API's own rule, checked before sending. */
  function questionProblem(content) {
    if (content === "") return "Type a question first: this one is empty or only spaces.";
    const length = questionLength(content);
    if (length > MAX_QUESTION_CHARS) return `${overLimitMessage(length)} Shorten the question to ask it.`;
    return null;
  }

  /** The live count under the box, shown from near the limit on, so a long paste is never cut unseen. */
  function updateQuestionHint() {
    const length = questionLength(els.question.value.trim());
    const over = length > MAX_QUESTION_CHARS;
    els.question.setAttribute("aria-invalid", String(over));
    els.questionHint.classList.toggle("over", over);
    els.questionHint.hidden = length < MAX_QUESTION_CHARS * SHOW_COUNT_FROM_SHARE;
    els.questionHint.textContent = over
      ? overLimitMessage(length)
      : `${numbers.format(length)} of ${numbers.format(MAX_QUESTION_CHARS)} characters`;
    // A complaint about the question goes as soon as it is edited: from then on the live count speaks.
    if (els.formError.dataset.aboutQuestion === "true") showFormError("");
  }

  /** Ask, and the suggested next questions (which ask too), wait while an answer is being written. */
  function refreshAsk() {
    els.ask.disabled = state.follower !== null || state.sending || Date.now() < state.askHeldUntil;
    for (const followUp of els.transcript.querySelectorAll("button.follow-up")) followUp.disabled = els.ask.disabled;
  }

  /** After a 429, Ask waits out the server's Retry-After instead of inviting another refusal. */
  function holdAsk(seconds) {
    state.askHeldUntil = Date.now() + seconds * 1000;
    clearTimeout(state.askHoldTimer);
    state.askHoldTimer = setTimeout(refreshAsk, seconds * 1000);
    refreshAsk();
  }

  function setRunning(running) {
    els.cancel.hidden = !running;
    els.cancel.disabled = false;
    refreshAsk();
  }

  // --- the page -------------------------------------------------------------------------------------------

  function follow(runId, eventsUrl, question) {
    const view = new AnswerView({ runId, question });
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
      JSON.stringify({ conversationId: state.conversationId, runId, eventsUrl, question }),
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
      if (!(error instanceof ApiError)) throw error;
      showFormError(`Could not load conversations: ${describeApiError(error)}`);
      return;
    }
    els.conversations.replaceChildren(
      ...conversations.map((conversation) => {
        const item = element("li");
        const button = element("button", "", conversation.title || "Untitled");
        button.type = "button";
        button.title = conversation.title || "Untitled";
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
      if (!(error instanceof ApiError)) throw error;
      showFormError(`Could not open the conversation: ${describeApiError(error)}`);
      return;
    }
    state.conversationId = conversation.id;
    clearTranscript();
    let question = "";
    for (const message of conversation.messages) {
      if (message.role === "user") {
        question = message.content;
        appendUserTurn(message.content);
      } else {
        appendAssistantTurn(AnswerView.finished(message, question));
      }
    }
    scrollTranscriptToEnd();
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
        follow(active.runId, active.eventsUrl, active.question);
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
    clearTranscript(element("p", "empty-state", "Ask a new question."));
    for (const button of els.conversations.querySelectorAll("button")) button.setAttribute("aria-current", "false");
    els.question.focus();
  }

  async function ask(event) {
    event.preventDefault();
    if (state.follower || state.sending) return;
    const content = els.question.value.trim();
    const problem = questionProblem(content);
    if (problem) {
      showFormError(problem, { aboutQuestion: true });
      els.questionHint.hidden = true; // the complaint carries the count: once is enough
      els.question.focus();
      return;
    }
    if (await send(content)) {
      els.question.value = "";
      updateQuestionHint();
    }
  }

  /** A suggested next question, asked in this conversation as it stands; the box keeps what is in it. */
  function askFollowUp(question) {
    if (state.follower || state.sending) return;
    send(question);
  }

  /** Post `content` to the current conversation (made first if there is none) and follow its answer;
   * whether it was accepted. A refusal is said under the box. */
  async function send(content) {
    showFormError("");
    state.sending = true;
    refreshAsk();
    try {
      if (state.conversationId === null) {
        state.conversationId = (await api("/api/conversations", { method: "POST", body: {} })).id;
      }
      const accepted = await api(`/api/conversations/${state.conversationId}/messages`, {
        method: "POST",
        body: { content, mode: els.mode.value, timezone: browserTimeZone() },
      });
      appendUserTurn(content);
      scrollTranscriptToEnd(); // the asker wants to see their answer come in
      follow(accepted.run_id, accepted.events_url, content);
      loadConversations();
      return true;
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      showFormError(describeApiError(error));
      if (error.status === 429 && error.retryAfterS) holdAsk(error.retryAfterS);
      return false;
    } finally {
      state.sending = false;
      refreshAsk();
    }
  }

  async function cancel() {
    if (!state.follower) return;
    els.cancel.disabled = true;
    try {
      await state.follower.cancel();
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      showFormError(`Could not cancel: ${describeApiError(error)}`);
      els.cancel.disabled = false;
    }
  }

  // What watchlists.js (loaded next) shows a brief with: the same answer view, fed the same way.
  window.ChatAnswers = { api, ApiError, AnswerView, RunFollower, browserTimeZone };

  els.form.addEventListener("submit", ask);
  els.question.addEventListener("input", updateQuestionHint);
  els.question.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.metaKey || event.ctrlKey)) els.form.requestSubmit();
  });
  els.transcript.addEventListener("scroll", () => {
    // Scroll events arrive a frame late, when the answer may have grown again: only a move up away from
    // the end is the reader's doing (a panel closing can move the view up too, but leaves it at the end).
    const top = els.transcript.scrollTop;
    if (isAtTranscriptEnd()) state.atTranscriptEnd = true;
    else if (top < state.lastScrollTop) state.atTranscriptEnd = false;
    state.lastScrollTop = top;
  });
  els.cancel.addEventListener("click", cancel);
  els.newChat.addEventListener("click", newChat);

  (async () => {
    await loadConversations();
    const active = JSON.parse(sessionStorage.getItem(ACTIVE_RUN_KEY) || "null");
    if (active && active.conversationId) await openConversation(active.conversationId);
  })();
})();
