/*
 * Trust at a glance: how far an answer can be relied on, shown on the answer itself.
 *
 * - The confidence badge: the research's evidence confidence (0-1), from the `round` events while the run
 *   goes on and from the stored run (GET /api/runs/{id} `confidence`) once it is done: that one is the
 *   confidence after the citation check, which unsupported citations lower. Citations whose source could
 *   not be read leave it as it was: the badge says how many, and why. Its components show
 *   in a popover on hover and on keyboard focus. Below the threshold, or on shallow evidence, the badge says
 *   "low confidence" (the backend's own note under the answer gives the reasons; it is not repeated here).
 * - Contradictions between findings: listed in the process panel, flagged in the trust line.
 * - Citation marks: the `verification` event says, per `[n]` marker (by its position among the answer's
 *   markers), whether its source bears it out; the rendered marker gets a class and the evidence as title.
 * - Flagged numbers: figures of the answer that match no market data value or computed figure (the run's
 *   `signals.numbers.unmatched_values`), marked where they appear in the text.
 *
 * Everything is built as elements with text: claims, evidence and numbers come from a model or the web.
 */
window.ChatTrust = (() => {
  "use strict";

  const { element, replaceMatches } = window.ChatDom;

  // The backend's default RESEARCH_CONFIDENCE_THRESHOLD: rounds do not carry the threshold, so while the
  // run streams the badge compares with this; the stored run's own threshold replaces it when it is done.
  const DEFAULT_THRESHOLD = 0.75;
  const COMPONENTS = [
    ["coverage", "Coverage"],
    ["credibility", "Source credibility"],
    ["diversity", "Source diversity"],
    ["evidence", "Evidence depth"],
    ["consistency", "Consistency"],
  ];
  const CHECK_GLYPHS = { supported: "✓", unsupported: "✗", unreachable: "?" };
  const CHECK_WORDS = {
    supported: "supported by its source",
    unsupported: "not supported by its source",
    unreachable: "source could not be read to check",
  };
  const VERDICT_WORDS = { supported: "supported", unsupported: "unsupported", unreachable: "could not be checked" };
  const FLAGGED_TITLE = "not found in the market data";
  const score = new Intl.NumberFormat("en", { minimumFractionDigits: 2, maximumFractionDigits: 2 });

  let badgesShown = 0; // ids for the popovers the badges are described by

  /** A reason code of an unreachable citation as words, as the backend writes it: "HTTP 403", "timeout". */
  function reasonText(reason) {
    const status = /^http_(\d{3})$/.exec(reason);
    return status ? `HTTP ${status[1]}` : String(reason).replace(/_/g, " ");
  }

  /** "3 HTTP 403, 2 timeout": counts by reason, the most frequent first, ties by their code (as the backend
   * writes them: a stored run's counts may come back in any key order). */
  function reasonsText(counts) {
    return Object.entries(counts)
      .sort(([codeA, a], [codeB, b]) => b - a || (codeA < codeB ? -1 : codeA > codeB ? 1 : 0))
      .map(([reason, count]) => `${count} ${reasonText(reason)}`)
      .join(", ");
  }

  /** "5 citations could not be checked (3 HTTP 403, 2 timeout); they leave the confidence as it was", or
   * "" when every citation could be read (or none was checked). */
  function uncheckedText(confidence) {
    const count = confidence.citations_unchecked;
    if (typeof count !== "number" || count === 0) return "";
    const why = confidence.unchecked_reasons ? reasonsText(confidence.unchecked_reasons) : "";
    const citations = count === 1 ? "1 citation" : `${count} citations`;
    return `${citations} could not be checked${why ? ` (${why})` : ""}; they leave the confidence as it was`;
  }

  function isLow(confidence) {
    const threshold = confidence.threshold ?? DEFAULT_THRESHOLD;
    return Boolean(confidence.shallow) || confidence.score < threshold;
  }

  /** The components as one line, for the badge's title: "Coverage 0.80 · Source credibility 0.60 · …". */
  function componentsLine(confidence) {
    const parts = COMPONENTS.filter(([key]) => typeof confidence[key] === "number").map(
      ([key, label]) => `${label} ${score.format(confidence[key])}`,
    );
    if (confidence.shallow) parts.push("shallow evidence");
    if (typeof confidence.citation_support === "number") {
      parts.push(`Citations supported ${score.format(confidence.citation_support)}`);
    }
    if (typeof confidence.evidence_score === "number") {
      parts.push(`lowered from ${score.format(confidence.evidence_score)} by the citation check`);
    }
    const unchecked = uncheckedText(confidence);
    if (unchecked) parts.push(unchecked);
    if (typeof confidence.threshold === "number") parts.push(`threshold ${score.format(confidence.threshold)}`);
    return parts.join(" · ");
  }

  /** The badge: "Confidence 0.82", or "Low confidence 0.41" with the warning style; focusable, with a
   * popover of its components (and, for the stored run, its one-paragraph summary). */
  function confidenceBadge(confidence) {
    badgesShown += 1;
    const low = isLow(confidence);
    const badge = element("span", `confidence-badge${low ? " low" : ""}`);
    badge.tabIndex = 0;
    badge.dataset.score = String(confidence.score);
    badge.append(
      element("span", "confidence-label", low ? "Low confidence" : "Confidence"),
      element("span", "confidence-score", score.format(confidence.score)),
    );
    if (confidence.shallow) badge.append(element("span", "confidence-shallow", "shallow"));
    const unchecked = uncheckedText(confidence);
    if (unchecked) badge.append(element("span", "confidence-unchecked", `${confidence.citations_unchecked} unchecked`));
    badge.title = componentsLine(confidence);
    const popover = element("span", "confidence-components");
    popover.id = `confidence-components-${badgesShown}`;
    popover.setAttribute("role", "tooltip");
    const list = element("dl");
    for (const [key, label] of COMPONENTS) {
      if (typeof confidence[key] !== "number") continue;
      const row = element("div");
      row.dataset.component = key;
      row.append(element("dt", "", label), element("dd", "", score.format(confidence[key])));
      list.append(row);
    }
    popover.append(list);
    if (unchecked) popover.append(element("span", "confidence-unchecked-why", `${unchecked}.`));
    if (typeof confidence.threshold === "number") {
      popover.append(element("span", "confidence-threshold", `Below ${score.format(confidence.threshold)} counts as low.`));
    }
    if (confidence.summary) popover.append(element("span", "confidence-summary", confidence.summary));
    badge.append(popover);
    badge.setAttribute("aria-describedby", popover.id);
    return badge;
  }

  /** A contradiction as a line: "“claim a” (q1) vs “claim b” (q3), severity 0.80". */
  function contradictionText(item) {
    return `“${item.claim_a}” (${item.finding_a}) vs “${item.claim_b}” (${item.finding_b}), severity ${score.format(item.severity)}`;
  }

  /** Contradictions seen over the rounds, each once, in the order first seen. */
  function mergeContradictions(known, more) {
    const key = (item) => `${item.finding_a}|${item.claim_a}|${item.finding_b}|${item.claim_b}`;
    const seen = new Set(known.map(key));
    return [...known, ...more.filter((item) => !seen.has(key(item)) && seen.add(key(item)))];
  }

  /** Mark the rendered `[n]` markers of `answer` from the verification's checks (marker_index is the
   * marker's position among the answer's markers). A check whose marker is not the one rendered there
   * (a marker inside code is not rendered as one) is left unmarked rather than put on the wrong marker. */
  function markCitations(answer, checks) {
    const markers = [...answer.querySelectorAll(".citation")];
    for (const check of checks) {
      const marker = markers[check.marker_index];
      if (!marker || marker.dataset.n !== String(check.n)) continue;
      marker.classList.add("checked", check.status);
      marker.dataset.verification = check.status;
      marker.dataset.glyph = CHECK_GLYPHS[check.status] || "";
      const words = check.reason ? `${CHECK_WORDS[check.status]} (${reasonText(check.reason)})` : CHECK_WORDS[check.status];
      const said = check.evidence ? `${words}: “${check.evidence}”` : words;
      marker.title = marker.title ? `${marker.title} — ${said}` : said;
    }
  }

  /** Per source n: "2 supported, 1 could not be checked (HTTP 403)" from the checks of its markers. */
  function sourceVerdicts(checks) {
    const counts = new Map();
    for (const check of checks) {
      const of = counts.get(check.n) || { supported: 0, unsupported: 0, unreachable: 0, reasons: {} };
      of[check.status] += 1;
      if (check.reason) of.reasons[check.reason] = (of.reasons[check.reason] || 0) + 1;
      counts.set(check.n, of);
    }
    const verdicts = new Map();
    for (const [n, of] of counts) {
      const why = Object.keys(of.reasons).map(reasonText).join(", ");
      const parts = ["supported", "unsupported", "unreachable"]
        .filter((status) => of[status])
        .map((status) => `${of[status]} ${VERDICT_WORDS[status]}${status === "unreachable" && why ? ` (${why})` : ""}`);
      verdicts.set(n, { text: `citations: ${parts.join(", ")}`, worst: of.unsupported ? "unsupported" : of.unreachable ? "unreachable" : "supported" });
    }
    return verdicts;
  }

  /** Wrap each occurrence of the flagged figures (as the answer writes them, e.g. "12.3%") in the text of
   * `answer` (outside links and code) in a mark saying it was not found in the market data. A figure is
   * matched whole: "2.1" is not marked inside "12.15". */
  function markFlaggedNumbers(answer, values) {
    const written = [...new Set(values.map((value) => String(value).trim()).filter(Boolean))];
    if (written.length === 0) return;
    const escaped = written.sort((a, b) => b.length - a.length).map((value) => value.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    const pattern = new RegExp(`(?<![\\d.,])(?:${escaped.join("|")})(?![\\d]|[.,]\\d)`, "g");
    replaceMatches(answer, pattern, "a, code, pre, .citation, mark.flagged-number", (match) => {
      const mark = element("mark", "flagged-number", match[0]);
      mark.title = FLAGGED_TITLE;
      return mark;
    });
  }

  /** The figures the run's number check could not trace, from its signals (after done). */
  function flaggedValues(signals) {
    const numbers = signals && signals.numbers;
    return numbers && Array.isArray(numbers.unmatched_values) ? numbers.unmatched_values.map((item) => item.value) : [];
  }

  return {
    reasonText,
    uncheckedText,
    confidenceBadge,
    contradictionText,
    mergeContradictions,
    markCitations,
    sourceVerdicts,
    markFlaggedNumbers,
    flaggedValues,
  };
})();
