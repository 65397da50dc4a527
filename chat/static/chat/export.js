/*
 * Exports of an answer, made in the browser from what the page holds plus GET /api/runs/{id}:
 * the answer as Markdown with its numbered sources (for the clipboard), the whole run as a Markdown
 * report (answer, sources, figures, confidence, citation checks, research trace, computed facts), and a
 * chart's figures as CSV.
 *
 * Markdown is text another program renders, so titles and labels from the web are escaped where they
 * could be read as markup, and links are only ever http(s) URLs. The answer is the model's Markdown and
 * stays Markdown, but its raw HTML is escaped (`<script>`, `<img onerror>` show as text) and its links and
 * images that are not http(s) (`javascript:`, `data:`, ...) keep only their text.
 */
window.ChatExport = (() => {
  "use strict";

  const { httpUrl } = window.ChatDom;
  const { figureTable, formatFigure, inPeriodOrder, unitLabel } = window.ChatFigures;
  const { reasonText, uncheckedText } = window.ChatTrust;

  const ROUTE_NAMES = { market_data: "market data", web_search: "web search", synthesis: "answered in the synthesis" };
  const plain = new Intl.NumberFormat("en", { maximumFractionDigits: 4 });

  // --- Markdown -------------------------------------------------------------------------------------------

  /** Text that Markdown shows as written: its punctuation that could start markup is backslash-escaped. */
  function markdownText(text) {
    return String(text).replace(/[\\`*_[\]<>|#]/g, "\\$&").replace(/\s+/g, " ").trim();
  }

  /** A source's URL inside `( )`: parentheses and spaces encoded, so the link cannot end early. */
  function markdownUrl(url) {
    // encodeURIComponent leaves parentheses as they are.
    return url.replace(/[()\s]/g, (character) => `%${character.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`);
  }

  // An inline link or image: `[label](destination "title")`, the destination bare (one level of balanced
  // parentheses, as CommonMark allows) or in `< >`, the label holding at most one level of brackets.
  const INLINE_LINK =
    /(!?)\[((?:[^[\]\\]|\\.|\[(?:[^[\]\\]|\\.)*\])*)\]\(\s*(<[^<>\n]*>|(?:[^\s()\\]|\\.|\((?:[^\s()\\]|\\.)*\))*)(?:\s+(?:"[^"\n]*"|'[^'\n]*'|\([^()\n]*\)))?\s*\)/g;
  // A link reference definition, `[label]: destination "title"`, the destination maybe on the next line.
  const REFERENCE_DEFINITION = /^ {0,3}\[((?:[^[\]\\]|\\.)+)\]:[ \t]*\n?[ \t]*(<[^<>\n]*>|\S+).*$/gm;
  const HTTP_AUTOLINK = /<(https?:\/\/[^\s<>]*)>/gi;
  const PLACEHOLDER = /\u0000(\d+)\u0000/g;

  function destination(raw) {
    return raw.startsWith("<") && raw.endsWith(">") ? raw.slice(1, -1) : raw;
  }

  /** Text in which nothing can start HTML (`<`) or close a link's label (`](`): as entities, which no
   * backslash in front can turn back into markup. */
  function inert(text) {
    return text.replace(/</g, "&lt;").replace(/\]\(/g, "&#93;(");
  }

  /** The model's Markdown with nothing active in it but http(s) links and images: raw HTML shows as text,
   * other links keep their text. Links are rebuilt and set aside; then whatever still looks like the start
   * of HTML or of a link is made inert, so a construct the patterns missed stays text. */
  function safeMarkdown(text) {
    const kept = [];
    const keep = (markdown) => `\u0000${kept.push(markdown) - 1}\u0000`;
    const relink = (part) =>
      part.replace(INLINE_LINK, (match, bang, label, target) => {
        const url = httpUrl(destination(target));
        const inner = inert(bang ? label : relink(label));
        return url === null ? inner : keep(`${bang}[${inner}](${markdownUrl(url)})`);
      });
    const safe = String(text)
      .replace(/\u0000/g, "")
      .replace(REFERENCE_DEFINITION, (line, label, target) => {
        const url = httpUrl(destination(target));
        return url === null ? "" : keep(`[${inert(label)}]: ${markdownUrl(url)}`);
      })
      .replace(HTTP_AUTOLINK, (match, url) => keep(match));
    let restored = inert(relink(safe));
    while (/\u0000\d+\u0000/.test(restored)) restored = restored.replace(PLACEHOLDER, (match, index) => kept[Number(index)]);
    return restored;
  }

  /** What a filing source says of itself, in order: ["10-Q", "Q1 FY2025", "filed 2025-01-31"]. A form
   * that is a number alone reads "Form 4"; a period that is a day (an 8-K's event, a Form 4's trade) says
   * which. Shared with the page's source list, which joins the parts as its other kinds' are. */
  function filingDetails(source) {
    const form = source.form || "";
    const parts = [];
    if (form) parts.push(/^\d+(\/A)?$/.test(form) ? `Form ${form}` : form);
    if (source.period) {
      const day = /^\d{4}-\d{2}-\d{2}$/.test(source.period);
      const what = !day ? "" : /^8-K/.test(form) ? "event " : /^4(\/A)?$/.test(form) ? "trade " : "period ";
      parts.push(`${what}${source.period}`);
    }
    if (source.filed) parts.push(`filed ${source.filed}`);
    return parts;
  }

  function sourceDetails(source) {
    if (source.kind === "market_data") return source.as_of ? `market data, as of ${source.as_of}` : "market data";
    if (source.kind === "filing") return ["SEC filing", ...filingDetails(source).map(markdownText)].join(", ");
    const parts = ["web"];
    if (source.domain_type) parts.push(source.domain_type.replace(/_/g, " "));
    if (source.published) parts.push(`published ${source.published}`);
    return parts.join(", ");
  }

  /** `- [n] [Title](url) — market data, as of 2025-06-13` (or `— SEC filing, 10-K, FY2024, filed
   * 2024-11-01`): the numbers the answer's `[n]` markers cite. */
  function sourceLines(sources) {
    return sources.map((source) => {
      const url = httpUrl(source.url);
      const title = markdownText(source.title || source.url);
      const named = url === null ? title : `[${title}](${markdownUrl(url)})`;
      return `- [${source.n}] ${named} — ${sourceDetails(source)}`;
    });
  }

  /** The answer as the model wrote it (Markdown, with `[n]` markers), then its numbered sources. */
  function answerMarkdown(text, sources) {
    const parts = [safeMarkdown(text.trim())];
    if (sources.length) parts.push(["Sources:", ...sourceLines(sources)].join("\n"));
    return `${parts.join("\n\n")}\n`;
  }

  function markdownTable(model) {
    const cell = (text) => markdownText(text) || " ";
    const header = [cell(model.corner), ...model.columns.map((column) => cell(columnLabel(column)))];
    const lines = [`| ${header.join(" | ")} |`, `|${["---", ...model.columns.map(() => "---:")].join("|")}|`];
    for (const row of model.rows) {
      const label = row.sourceN ? `${row.label} [${row.sourceN}]` : row.label;
      lines.push(`| ${[cell(label), ...row.cells.map((value) => formatFigure(value, model.scale))].join(" | ")} |`);
    }
    return lines.join("\n");
  }

  function columnLabel(column) {
    return column.sourceN ? `${column.label} [${column.sourceN}]` : column.label;
  }

  function figureSection(chart) {
    const sources = [...new Set(chart.series.map((series) => series.source_n))].map((n) => `[${n}]`).join(", ");
    const meta = [unitLabel(chart), `as of ${chart.as_of}`, `source ${sources}`].filter(Boolean).join(" · ");
    return [`### ${markdownText(chart.title)}`, meta, markdownTable(figureTable(chart))].join("\n\n");
  }

  function planSection(plan) {
    const subQuestions = (plan && plan.sub_questions) || [];
    if (subQuestions.length === 0) return "Answered from a single web search (no research plan).";
    return subQuestions
      .map((sq, i) => `${i + 1}. **${markdownText(sq.id)}** (${markdownText(sq.type)}, ${ROUTE_NAMES[sq.route] || markdownText(sq.route)}): ${markdownText(sq.question)}`)
      .join("\n");
  }

  function roundsSection(rounds) {
    if (!rounds || rounds.length === 0) return "No research rounds were recorded.";
    return rounds
      .map((round) => {
        const facts = [round.complete ? "complete" : "incomplete"];
        if (round.score !== null && round.score !== undefined) facts.push(`score ${plain.format(round.score)}/10`);
        if (round.sub_questions && round.sub_questions.length) facts.push(`sub-questions ${round.sub_questions.join(", ")}`);
        if (round.stop_reason) facts.push(`research stopped: ${round.stop_reason.replace(/_/g, " ")}`);
        const lines = [`- **Round ${round.n}**: ${facts.map(markdownText).join(" · ")}`];
        if (round.gaps && round.gaps.length) lines.push(`  - Gaps: ${round.gaps.map(markdownText).join("; ")}`);
        if (round.follow_ups && round.follow_ups.length) lines.push(`  - Followed up: ${round.follow_ups.map(markdownText).join("; ")}`);
        return lines.join("\n");
      })
      .join("\n");
  }

  const COMPONENT_NAMES = ["coverage", "credibility", "diversity", "evidence", "consistency"];

  function confidenceSection(confidence) {
    if (!confidence) return "No confidence score (a quick answer is not researched in rounds).";
    const low = confidence.shallow || confidence.score < confidence.threshold;
    const lines = [
      `- Score: ${plain.format(confidence.score)} (threshold ${plain.format(confidence.threshold)}${low ? ", low confidence" : ""})`,
      `- Components: ${COMPONENT_NAMES.map((name) => `${name} ${plain.format(confidence[name])}`).join(", ")}`,
      `- Shallow evidence: ${confidence.shallow ? "yes" : "no"}`,
    ];
    const unchecked = uncheckedText(confidence);
    if (unchecked) lines.push(`- Unchecked citations: ${unchecked}`);
    if (confidence.summary) lines.push(`- Summary: ${markdownText(confidence.summary)}`);
    return lines.join("\n");
  }

  /** Each checked `[n]` marker, in the answer's order: its status and the source's passage. */
  function verificationSection(citations) {
    if (!citations || citations.length === 0) return "The citations were not checked against their sources.";
    return [...citations]
      .sort((a, b) => a.marker_index - b.marker_index)
      .map((check) => {
        const evidence = check.evidence ? `: “${markdownText(check.evidence)}”` : "";
        const reason = check.reason ? ` (${markdownText(reasonText(check.reason))})` : "";
        return `- Marker ${check.marker_index + 1} [${check.n}]: ${check.status}${reason}${evidence}`;
      })
      .join("\n");
  }

  /** The research trace: per round, the confidence reached, new sources, weak areas, contradictions,
   * plan changes and why research stopped or went on. */
  function traceSection(trace) {
    if (!trace || trace.length === 0) return "No research trace was recorded.";
    return trace
      .map((entry) => {
        const facts = [`confidence ${plain.format(entry.confidence.score)}`, `${entry.new_sources} new sources (${entry.sources} in all)`];
        if (entry.confidence.shallow) facts.push("shallow");
        if (entry.stop_reason) facts.push(`stopped: ${entry.stop_reason.replace(/_/g, " ")}`);
        if (entry.goes_on_because) facts.push(`went on: ${String(entry.goes_on_because).replace(/_/g, " ")}`);
        const lines = [`- **Round ${entry.n}**: ${facts.map(markdownText).join(" · ")}`];
        if (entry.weak_areas && entry.weak_areas.length) lines.push(`  - Weak areas: ${entry.weak_areas.map(markdownText).join("; ")}`);
        for (const item of entry.contradictions || []) {
          lines.push(`  - Contradiction (severity ${plain.format(item.severity)}): ${markdownText(item.claim_a)} (${markdownText(item.finding_a)}) vs ${markdownText(item.claim_b)} (${markdownText(item.finding_b)})`);
        }
        for (const change of entry.plan_changes || []) {
          const why = change.reason === "gap" ? "a gap" : `weak evidence${change.weak_area ? ` on ${change.weak_area}` : ""}`;
          lines.push(`  - Added ${markdownText(change.id)} for ${markdownText(why)}: ${markdownText(change.question)}`);
        }
        return lines.join("\n");
      })
      .join("\n");
  }

  function factValue(value, unit) {
    if (value === null || value === undefined) return "not meaningful";
    if (unit === "percent") return `${plain.format(value)}%`;
    return `${plain.format(value)} ${unit}`;
  }

  function factsSection(facts) {
    if (!facts || facts.length === 0) return "No figures were computed from market data for this answer.";
    return facts
      .map((fact) => {
        const inputs = fact.inputs.map((input) => {
          const cited = input.source.n ? ` [${input.source.n}]` : "";
          return `${input.symbol} ${input.line} ${input.period} = ${plain.format(input.value)}${cited}`;
        });
        const lines = [
          `- **${markdownText(fact.id)}: ${markdownText(fact.label)}**: ${markdownText(factValue(fact.value, fact.unit))}`,
          `  - Formula: ${markdownText(fact.formula)}`,
          `  - Inputs: ${inputs.map(markdownText).join("; ")}`,
        ];
        if (fact.note) lines.push(`  - Note: ${markdownText(fact.note)}`);
        return lines.join("\n");
      })
      .join("\n");
  }

  /** The run as a Markdown document: what was asked, the answer and its sources, the figures drawn, how
   * the research went (plan and rounds, from the stored run) and the facts computed from market data. */
  function reportMarkdown({ question, text, sources, charts, run, verification, exportedAt }) {
    const about = [
      `- Run: ${run.id} (${run.mode || run.requested_mode}, ${run.status})`,
      `- Asked: ${run.created_at}`,
      ...(run.finished_at ? [`- Finished: ${run.finished_at}`] : []),
      `- Exported: ${exportedAt}`,
    ];
    const sections = [
      `# ${markdownText(question || "Research report")}`,
      about.join("\n"),
      "## Answer",
      safeMarkdown(text.trim()) || "_No answer text._",
      "## Sources",
      sources.length ? sourceLines(sources).join("\n") : "No sources.",
    ];
    if (charts.length) sections.push("## Figures", ...charts.map(figureSection));
    sections.push(
      "## Confidence",
      confidenceSection(run.confidence),
      "## Citation checks",
      verificationSection(verification),
      "## Research trace",
      "### Plan",
      planSection(run.plan),
      "### Rounds",
      roundsSection(run.rounds),
      "### Evidence by round",
      traceSection(run.trace),
      "## Facts computed from market data",
      factsSection(run.facts),
    );
    return `${sections.join("\n\n")}\n`;
  }

  // --- CSV ------------------------------------------------------------------------------------------------

  /** One CSV field: quoted when it must be, and a text that a spreadsheet would run as a formula
   * (starting with = + - @) is prefixed with ' so that it stays text. */
  function csvField(value, { text = true } = {}) {
    let field = value === null || value === undefined ? "" : String(value);
    if (text && /^[=+\-@\t\r]/.test(field)) field = `'${field}`;
    return /[",\r\n]/.test(field) ? `"${field.replace(/"/g, '""')}"` : field;
  }

  /** A chart's figures, one row per point, unscaled: `series,period|date,value,unit,as_of,source_n,
   * source_title,source_url`, each series' rows oldest first as the chart draws them. The source columns are
   * empty until the answer's sources have arrived. */
  function chartCsv(event, sources) {
    const chart = inPeriodOrder(event);
    const byNumber = new Map(sources.map((source) => [source.n, source]));
    const header = ["series", chart.kind === "bars" ? "period" : "date", "value", "unit", "as_of", "source_n", "source_title", "source_url"];
    const rows = chart.series.flatMap((series) => {
      const source = byNumber.get(series.source_n);
      return series.points.map(([x, y]) =>
        [
          csvField(series.name),
          csvField(x),
          csvField(y, { text: false }),
          csvField(chart.unit),
          csvField(chart.as_of),
          csvField(series.source_n, { text: false }),
          csvField(source ? source.title : ""),
          csvField(source ? httpUrl(source.url) : ""),
        ].join(","),
      );
    });
    return `${[header.join(","), ...rows].join("\r\n")}\r\n`;
  }

  /** A file name made of the words of `title`: "Total Revenue (quarterly)" → "total-revenue-quarterly". */
  function fileStem(title) {
    return title.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 60) || "export";
  }

  return { answerMarkdown, reportMarkdown, chartCsv, fileStem, safeMarkdown, filingDetails };
})();
