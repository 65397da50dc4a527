/*
 * Figures of an answer: the run's `chart` events drawn with TradingView's lightweight-charts, and the same
 * numbers as a table.
 *
 * A chart event is `{id, title, kind: "line"|"bars", unit, as_of, source_n, series: [{name, source_n,
 * points: [[x, y], ...], ends}]}`: x is an ISO date (price history) or a period label ("2025-Q1", "FY2024",
 * "Q1 FY2027 (Jul–Sep 2026)", "TTM 2025-03-31") for statement lines, and `ends[i]` says when point i is
 * (the period's end, ISO). The points are the market data tool's figures, never a model's.
 *
 * Figures read oldest first by their ends, never by their labels: "Q1 FY2027" sorts before "Q3 FY2026" as
 * text, and comes after it. The chart, its table, the report and the CSV all take that one order.
 *
 * Lines (price history) use the library's time scale. Bars do not: a period label is not a moment, and a
 * comparison needs each period's bars side by side, which a time axis would draw on top of one another.
 * So bars get a custom horizontal scale whose items are period slots (0, 1, 2, ... labelled with the
 * periods themselves) and a custom series that draws one bar per company within each slot. The axis then
 * reads "2024-Q3  2024-Q4  2025-Q1", each label centred under its group, and the crosshair names the period.
 *
 * The chart is a picture; the numbers live in the table (toggled in place) and the CSV. Charts neither
 * scroll nor zoom: inside a scrolling transcript the wheel and a finger's drag belong to the page.
 *
 * A chart of a listing quoted in a hundredth of its currency (London's pence) carries `sub_unit`: its points
 * are in the main unit, and it is shown as the exchange's readers read it, "72.50p (£0.7250)", the axis in
 * pence. The CSV keeps the points as they are, in the main unit.
 */
window.ChatFigures = (() => {
  "use strict";

  const { element, button, externalLink } = window.ChatDom;
  const Charts = window.LightweightCharts;

  const SERIES_COLORS = ["#1f5fbf", "#d9822b", "#2e8b57", "#8e44ad"];
  const BAR_GROUP_SHARE = 0.7; // of a period's slot; the rest is the gap between periods
  const BAR_GAP_PX = 1; // between the bars of one period, in device pixels
  // Totals in the billions read as "391.04" under "USD billions", as statements are written.
  const SCALES = [
    { factor: 1e12, word: "trillions", suffix: "T" },
    { factor: 1e9, word: "billions", suffix: "B" },
    { factor: 1e6, word: "millions", suffix: "M" },
  ];
  const UNSCALED = { factor: 1, word: "", suffix: "" };
  const TRADINGVIEW_URL = "https://www.tradingview.com/";
  const figureNumber = new Intl.NumberFormat("en", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  const mainUnitNumber = new Intl.NumberFormat("en", { minimumFractionDigits: 4, maximumFractionDigits: 4 });
  const axisNumber = new Intl.NumberFormat("en", { maximumFractionDigits: 2 });

  // --- the numbers ----------------------------------------------------------------------------------------

  /** The scale a chart's figures are shown in: the largest that keeps its biggest figure at 1 or more; for
   * a price quoted in a sub-unit, that unit (pence: a hundredth of the pound the points are in). */
  function scaleOf(chart) {
    const sub = chart.sub_unit;
    if (sub) return { factor: 1 / sub.per_main, word: `${sub.name} (${sub.code}), ${chart.unit} in brackets`, suffix: sub.suffix, subUnit: sub };
    const largest = Math.max(0, ...chart.series.flatMap((series) => series.points.map(([, y]) => Math.abs(y))));
    return SCALES.find((scale) => largest >= scale.factor) || UNSCALED;
  }

  /** E.g. "USD billions", "USD", "USD per share", "pence (GBp), GBP in brackets". */
  function unitLabel(chart, scale = scaleOf(chart)) {
    return scale.subUnit ? scale.word : [chart.unit, scale.word].filter(Boolean).join(" ");
  }

  /** A figure in its scale; a price quoted in a sub-unit as "72.50p (£0.7250)", as the server writes it. */
  function formatFigure(value, scale) {
    if (value === null || value === undefined) return "—";
    const sub = scale.subUnit;
    if (!sub) return figureNumber.format(value / scale.factor);
    const sign = value < 0 ? "-" : "";
    const size = Math.abs(value);
    return `${sign}${figureNumber.format(size * sub.per_main)}${sub.suffix} (${sign}${sub.main_symbol}${mainUnitNumber.format(size)})`;
  }

  const ISO_MOMENT = /^\d{4}-\d{2}-\d{2}/;

  /** Every x of the chart's series, oldest first by when it is: the end the server sends beside each point
   * (the first series to have an x dates it). A chart stored before ends were sent: an ISO x dates itself,
   * and period labels keep the order the series give them, which the server always sent oldest first. */
  function periodsOf(chart) {
    const ends = new Map();
    for (const series of chart.series) {
      series.points.forEach(([x], i) => {
        if (!ends.has(x)) ends.set(x, series.ends ? series.ends[i] : ISO_MOMENT.test(x) ? x : null);
      });
    }
    const xs = [...ends.keys()];
    if (xs.some((x) => ends.get(x) === null)) return xs;
    const moment = new Map(xs.map((x) => [x, Date.parse(ends.get(x))]));
    return xs.sort((a, b) => moment.get(a) - moment.get(b));
  }

  /** The chart with each series' points (and their ends) in the order of `periodsOf`: what the figure, its
   * table and its CSV show, whatever order the event came in. */
  function inPeriodOrder(chart) {
    const rank = new Map(periodsOf(chart).map((x, i) => [x, i]));
    const series = chart.series.map((one) => {
      const order = one.points.map((_, i) => i).sort((a, b) => rank.get(one.points[a][0]) - rank.get(one.points[b][0]));
      const ordered = { ...one, points: order.map((i) => one.points[i]) };
      if (one.ends) ordered.ends = order.map((i) => one.ends[i]);
      return ordered;
    });
    return { ...chart, series };
  }

  /** The chart's figures as a table (raw numbers; `scale` says how to show them). Bars: a column per
   * period and a row per series, as statements are laid out. Lines: dozens to hundreds of dates, so a row
   * per date and a column per series, so that the table scrolls down rather than across. */
  function figureTable(chart) {
    const scale = scaleOf(chart);
    const unit = unitLabel(chart, scale);
    const xs = periodsOf(chart);
    const values = chart.series.map((series) => new Map(series.points));
    if (chart.kind === "bars") {
      return {
        scale,
        corner: unit,
        columns: xs.map((x) => ({ label: x })),
        rows: chart.series.map((series, i) => ({
          label: series.name,
          sourceN: series.source_n,
          cells: xs.map((x) => values[i].get(x) ?? null),
        })),
      };
    }
    return {
      scale,
      corner: "Date",
      columns: chart.series.map((series) => ({ label: `${series.name}, ${unit}`, sourceN: series.source_n })),
      rows: xs.map((x) => ({ label: x, cells: values.map((byX) => byX.get(x) ?? null) })),
    };
  }

  // --- drawing --------------------------------------------------------------------------------------------

  /** The horizontal scale of a bar chart: items are period slots 0..n-1, shown by their period labels. */
  class PeriodScale {
    constructor(labels) {
      this.labels = labels;
      this.chartOptions = null;
    }

    options() { return this.chartOptions; }
    setOptions(options) { this.chartOptions = options; }
    preprocessData() {}
    updateFormatter() {}
    createConverterToInternalObj() { return (slot) => slot; }
    convertHorzItemToInternal(slot) { return slot; }
    key(slot) { return slot; }
    cacheKey(slot) { return slot; }
    formatHorzItem(slot) { return this.labels[slot] ?? ""; }
    formatTickmark(mark) { return this.labels[mark.time] ?? ""; }
    maxTickMarkWeight(marks) { return marks.reduce((weight, mark) => Math.max(weight, mark.weight), 0); }

    /** Every period matters as much as the next: the axis shows as many labels as fit, evenly. */
    fillWeightsForPoints(points, startIndex) {
      for (let i = startIndex; i < points.length; i += 1) points[i].timeWeight = 1;
    }
  }

  /** A custom series: per period slot, one bar per series side by side, from zero (so negative figures,
   * a loss say, go down). Items are `{time: slot, values: [y or null per series]}`. */
  class GroupedBars {
    constructor(colors) {
      this.colors = colors;
      this.data = null;
    }

    renderer() { return this; }
    update(data) { this.data = data; }
    isWhitespace(item) { return !Array.isArray(item.values) || item.values.every((value) => value === null); }
    defaultOptions() { return { ...Charts.customSeriesDefaultOptions, color: this.colors[0] }; }

    /** Lowest, highest, current: zero is always in range, so bar heights compare truly. */
    priceValueBuilder(item) {
      const values = item.values.filter((value) => value !== null);
      return [Math.min(0, ...values), Math.max(0, ...values), values[values.length - 1]];
    }

    draw(target, priceToY) {
      const data = this.data;
      if (data === null || data.visibleRange === null) return;
      target.useBitmapCoordinateSpace(({ context, horizontalPixelRatio, verticalPixelRatio }) => {
        const zero = priceToY(0);
        if (zero === null) return;
        const groupWidth = data.barSpacing * BAR_GROUP_SHARE;
        const barWidth = groupWidth / this.colors.length;
        for (let i = data.visibleRange.from; i < data.visibleRange.to; i += 1) {
          const bar = data.bars[i];
          bar.originalData.values.forEach((value, s) => {
            const y = value === null ? null : priceToY(value);
            if (y === null) return;
            const left = Math.round((bar.x - groupWidth / 2 + s * barWidth) * horizontalPixelRatio);
            const right = Math.round((bar.x - groupWidth / 2 + (s + 1) * barWidth) * horizontalPixelRatio);
            const top = Math.round(Math.min(y, zero) * verticalPixelRatio);
            const bottom = Math.round(Math.max(y, zero) * verticalPixelRatio);
            context.fillStyle = this.colors[s];
            context.fillRect(left, top, Math.max(1, right - left - BAR_GAP_PX), Math.max(1, bottom - top));
          });
        }
      });
    }
  }

  function chartOptions(scale) {
    return {
      autoSize: true,
      layout: {
        attributionLogo: false, // its logo is styled by an inline <style> the page's CSP refuses; credited below
        background: { color: "transparent" },
        textColor: "#6b6b70",
        fontSize: 11,
        fontFamily: getComputedStyle(document.documentElement).fontFamily,
      },
      grid: { vertLines: { visible: false }, horzLines: { color: "#ececea" } },
      rightPriceScale: { borderVisible: false, entireTextOnly: true },
      // The whole series stays in view as the layout narrows (a phone turned, a sidebar folding).
      timeScale: { borderVisible: false, fixLeftEdge: true, fixRightEdge: true, lockVisibleTimeRangeOnResize: true },
      handleScroll: false,
      handleScale: false,
      localization: {
        priceFormatter: (value) => `${axisNumber.format(value / scale.factor)}${scale.suffix}`,
      },
    };
  }

  /** A price history's x: a business day ("2025-06-13") or, for intraday bars, a UTC timestamp. */
  function timeOf(x) {
    return x.length === 10 ? x : Math.floor(Date.parse(x) / 1000);
  }

  function drawLines(container, chart, scale) {
    const intraday = chart.series.some((series) => series.points.some(([x]) => x.length > 10));
    const options = chartOptions(scale);
    options.timeScale.timeVisible = intraday;
    const api = Charts.createChart(container, options);
    chart.series.forEach((series, i) => {
      const line = api.addSeries(Charts.LineSeries, {
        color: SERIES_COLORS[i % SERIES_COLORS.length],
        lineWidth: 2,
        priceLineVisible: false,
        title: chart.series.length > 1 ? series.name : "",
      });
      line.setData(series.points.map(([x, y]) => ({ time: timeOf(x), value: y })));
    });
    return api;
  }

  function drawBars(container, chart, scale) {
    const periods = periodsOf(chart);
    const api = Charts.createChartEx(container, new PeriodScale(periods), chartOptions(scale));
    const values = chart.series.map((series) => new Map(series.points));
    const colors = chart.series.map((_, i) => SERIES_COLORS[i % SERIES_COLORS.length]);
    const bars = api.addCustomSeries(new GroupedBars(colors), { priceLineVisible: false, lastValueVisible: false });
    bars.setData(periods.map((period, slot) => ({ time: slot, values: values.map((byPeriod) => byPeriod.get(period) ?? null) })));
    return api;
  }

  // --- one figure -----------------------------------------------------------------------------------------

  function tableElement(model, sourceLink) {
    const table = element("table", "figure-data");
    const head = element("tr");
    head.append(element("th", "corner", model.corner));
    for (const column of model.columns) {
      const cell = element("th", "", column.label);
      cell.scope = "col";
      if (column.sourceN) cell.append(sourceLink(column.sourceN));
      head.append(cell);
    }
    const body = element("tbody");
    for (const row of model.rows) {
      const line = element("tr");
      const label = element("th", "", row.label);
      label.scope = "row";
      if (row.sourceN) label.append(sourceLink(row.sourceN));
      line.append(label, ...row.cells.map((value) => element("td", "num", formatFigure(value, model.scale))));
      body.append(line);
    }
    const thead = element("thead");
    thead.append(head);
    table.append(thead, body);
    return table;
  }

  /** One chart event as a figure: caption (title, unit, as-of), legend with each series' source, the
   * chart or its table, and the buttons. `sourceLink(n)` makes the link to source n in the answer's list;
   * `onCsv(chart)` downloads the figures. */
  class Figure {
    constructor(event, { sourceLink, onCsv }) {
      const chart = inPeriodOrder(event);
      this.chart = chart;
      this.sourceLink = sourceLink;
      this.scale = scaleOf(chart);
      this.root = element("figure", "figure");
      this.root.dataset.chartId = chart.id;
      this.root.dataset.kind = chart.kind;

      const caption = element("figcaption");
      const meta = element("span", "figure-meta", [unitLabel(chart, this.scale), `as of ${chart.as_of}`].filter(Boolean).join(" · "));
      caption.append(element("span", "figure-title", chart.title), meta);

      const legend = element("ul", "figure-legend");
      chart.series.forEach((series, i) => {
        const item = element("li");
        const swatch = element("span", "swatch");
        swatch.style.backgroundColor = SERIES_COLORS[i % SERIES_COLORS.length];
        item.append(swatch, element("span", "series-name", series.name), sourceLink(series.source_n));
        legend.append(item);
      });

      this.tableToggle = button("figure-table-toggle", "Table", "Show the figures as a table");
      this.tableToggle.setAttribute("aria-pressed", "false");
      this.tableToggle.addEventListener("click", () => this.showTable(this.tableToggle.getAttribute("aria-pressed") !== "true"));
      const csv = button("figure-csv", "CSV", "Download the figures behind this chart as CSV");
      csv.addEventListener("click", () => onCsv(chart));
      const tools = element("div", "figure-tools");
      tools.append(this.tableToggle, csv);

      const head = element("div", "figure-head");
      head.append(caption, tools);
      this.chartBox = element("div", "figure-chart");
      this.chartBox.setAttribute("role", "img");
      this.chartBox.setAttribute("aria-label", `${chart.kind === "bars" ? "Bar" : "Line"} chart: ${chart.title}. The Table button shows its figures.`);
      this.tableBox = element("div", "figure-table");
      this.tableBox.hidden = true;
      const credit = element("p", "figure-credit");
      // The attribution its licence asks for: the NOTICE text and a link to TradingView.
      credit.append("Chart: ", externalLink(TRADINGVIEW_URL, "TradingView Lightweight Charts™"), " © 2023 TradingView, Inc.");
      this.root.append(head, legend, this.chartBox, this.tableBox, credit);
      this.api = null;
    }

    /** Draw once the figure is in the page (the chart sizes itself to its box). */
    draw() {
      const draw = this.chart.kind === "bars" ? drawBars : drawLines;
      this.api = draw(this.chartBox, this.chart, this.scale);
      this.api.timeScale().fitContent();
    }

    showTable(show) {
      if (show && this.tableBox.childElementCount === 0) {
        this.tableBox.append(tableElement(figureTable(this.chart), this.sourceLink));
      }
      this.tableBox.hidden = !show;
      this.chartBox.hidden = show;
      this.tableToggle.setAttribute("aria-pressed", String(show));
      this.tableToggle.textContent = show ? "Chart" : "Table";
      this.tableToggle.title = show ? "Show the chart" : "Show the figures as a table";
      if (!show && this.api) this.api.timeScale().fitContent();
    }

    remove() {
      if (this.api) this.api.remove();
      this.api = null;
      this.root.remove();
    }
  }

  return { Figure, figureTable, formatFigure, inPeriodOrder, unitLabel };
})();
