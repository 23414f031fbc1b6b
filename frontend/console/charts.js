// The room's charts, drawn with uPlot from the series API's columns; each with a text summary.
import uPlot from "uplot";
import { axisTime, count, departuresSummary, last, lineSummary, perMinute, recentSum, when, windowTotals } from "./format.js";

/** @typedef {Record<string, any>} Series */

const COLORS = ["#2563eb", "#d97706", "#059669", "#dc2626", "#7c3aed"];

/**
 * What each chart shows: its title, its lines (label and values from the series), its summary.
 * @type {{id: string, title: string, lines: (s: Series) => [string, (number|null)[]][], summary: (s: Series) => string}[]}
 */
export const CHARTS = [
  {
    id: "line",
    title: "Line length and held",
    lines: (s) => [["Waiting", s.waiting], ["Held", s.held]],
    summary: lineSummary,
  },
  {
    id: "admissions",
    title: "Admissions per minute against the rate",
    lines: (s) => [["Admitted / min", perMinute(s.admitted, s.step)], ["Rate / min", s.rate]],
    summary: (s) => {
      const perMin = recentSum(s.admitted, Math.round(60000 / s.step));
      return `${count(perMin)} admitted in the last minute; the rate is ${count(last(s.rate))} per minute.`;
    },
  },
  {
    id: "active",
    title: "Active visitors against capacity",
    lines: (s) => [["Active", s.active], ["Capacity", s.capacity.map((c) => (c ? c : null))]],
    summary: (s) => {
      const cap = last(s.capacity);
      return `${count(last(s.active))} active${cap ? ` of a capacity of ${count(cap)}` : " (no capacity limit)"}.`;
    },
  },
  {
    id: "entries",
    title: "Entries and refusals per minute",
    lines: (s) => [
      ["Entries / min", perMinute(s.entries, s.step)],
      ["Refused / min", perMinute(refused(s), s.step)],
    ],
    summary: (s) => {
      const n = Math.round(60000 / s.step);
      return `${count(recentSum(s.entries, n))} entries and ${count(recentSum(refused(s), n))} refusals in the last minute.`;
    },
  },
  {
    id: "wait",
    title: "Wait before admission (seconds)",
    lines: (s) => [["p50", s.waitP50], ["p90", s.waitP90]],
    summary: (s) => {
      const p50 = last(s.waitP50);
      const p90 = last(s.waitP90);
      if (p50 === null) return "Nobody was admitted in this span.";
      return `Of the last admitted, half waited under ${p50} s and nine in ten under ${p90} s.`;
    },
  },
  {
    id: "departures",
    title: "Left before their turn, and admissions unused, per minute",
    lines: (s) => [
      ["Left / min", perMinute(windowTotals(s.abandonedWaits || []), s.step)],
      ["Unused / min", perMinute(s.unusedAdmissions || s.times.map(() => null), s.step)],
    ],
    summary: departuresSummary,
  },
  {
    id: "agents",
    title: "Signed agents per minute",
    lines: (s) => {
      const none = s.times.map(() => null);
      return [
        ["Queued / min", perMinute(s.agentsQueued || none, s.step)],
        ["Through the lane / min", perMinute(s.agentsLane || none, s.step)],
        ["Refused / min", perMinute(s.agentsRefused || none, s.step)],
        ["Bad signature / min", perMinute(s.agentsInvalid || none, s.step)],
      ];
    },
    summary: (s) => {
      const n = Math.round(60000 / s.step);
      const sum = (/** @type {(number|null)[] | undefined} */ v) => recentSum(v || [], n);
      return `In the last minute, ${count(sum(s.agentsQueued))} signed agents queued, ${count(sum(s.agentsLane))} admitted through their lane, ${count(sum(s.agentsRefused))} refused by the room's setting and ${count(sum(s.agentsInvalid))} with a signature that did not hold.`;
    },
  },
];

/**
 * @param {Series} s
 * @returns {(number|null)[]}
 */
function refused(s) {
  return s.refusedFull.map((v, i) =>
    v === null ? null : v + (s.refusedDenied[i] || 0) + (s.refusedBusy[i] || 0),
  );
}

/** Charts of one room, created on the first data and updated in place after. */
export class RoomCharts {
  /** @param {HTMLElement} host */
  constructor(host) {
    this.host = host;
    /** @type {Map<string, {plot: any, summary: HTMLElement, figure: HTMLElement, canvas: HTMLElement}>} */
    this.made = new Map();
    /** @type {{at: number, kind: string, event: string}[]} scheduled events' edges, drawn on every chart */
    this.marks = [];
    window.addEventListener("resize", () => this.resize());
  }

  /** Forget the charts (another span: the axes start anew). */
  reset() {
    for (const { plot } of this.made.values()) plot.destroy();
    this.made.clear();
    this.host.replaceChildren();
  }

  /** @param {Series} s */
  update(s) {
    this.marks = s.marks || [];
    const xs = s.times.map((/** @type {number} */ t) => t / 1000);
    for (const chart of CHARTS) {
      const lines = chart.lines(s);
      const data = [xs, ...lines.map(([, values]) => values)];
      let made = this.made.get(chart.id);
      if (!made) {
        made = this.create(chart, lines.map(([label]) => label), data);
        this.made.set(chart.id, made);
      } else {
        made.plot.setData(data);
      }
      made.summary.textContent = chart.summary(s);
      made.figure.dataset.marks = String(this.marks.length);
      made.figure.dataset.points = String(xs.length);
      made.figure.dataset.last = JSON.stringify(lines.map(([, v]) => last(v)));
    }
  }

  /**
   * @param {{id: string, title: string}} chart
   * @param {string[]} labels
   * @param {any[]} data
   */
  create(chart, labels, data) {
    const figure = document.createElement("figure");
    figure.className = "chart";
    figure.id = `chart-${chart.id}`;
    const caption = document.createElement("figcaption");
    caption.textContent = chart.title;
    const canvas = document.createElement("div");
    canvas.setAttribute("aria-hidden", "true");
    const summary = document.createElement("p");
    summary.className = "summary";
    summary.id = `summary-${chart.id}`;
    figure.append(caption, canvas, summary);
    figure.setAttribute("aria-describedby", summary.id);
    this.host.append(figure);
    const options = {
      width: this.width(canvas),
      height: 180,
      // The console's one clock (uPlot's own says "2:30pm"): the legend as every time on the
      // page, the axis as a time of day (with the day once the span is longer than one).
      series: [
        { value: (/** @type {any} */ _u, /** @type {number | null} */ t) => (t === null ? "–" : when(t * 1000)) },
        ...labels.map((label, i) => ({ label, stroke: COLORS[i], width: 2, spanGaps: false })),
      ],
      axes: [
        {
          space: 64,
          values: (/** @type {any} */ u, /** @type {number[]} */ splits) => {
            const spanMs = (u.scales.x.max - u.scales.x.min) * 1000;
            return splits.map((t) => axisTime(t * 1000, spanMs));
          },
        },
        { size: 48 },
      ],
      scales: { y: { range: (/** @type {any} */ _u, /** @type {number} */ lo, /** @type {number} */ hi) => [0, Math.max(1, hi || 0) * 1.1] } },
      cursor: { drag: { x: false, y: false } },
      plugins: [this.markPlugin()],
    };
    const plot = new uPlot(options, data, canvas);
    return { plot, summary, figure, canvas };
  }

  /** A uPlot plugin drawing a dashed line at each event's start (solid colour) and end. */
  markPlugin() {
    return {
      hooks: {
        draw: [
          (/** @type {any} */ u) => {
            const ctx = u.ctx;
            ctx.save();
            ctx.setLineDash([4, 4]);
            ctx.lineWidth = 1.5;
            for (const mark of this.marks) {
              const x = Math.round(u.valToPos(mark.at / 1000, "x", true));
              if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
              ctx.strokeStyle = mark.kind === "eventStarts" ? "#7c3aed" : "#6b7280";
              ctx.beginPath();
              ctx.moveTo(x, u.bbox.top);
              ctx.lineTo(x, u.bbox.top + u.bbox.height);
              ctx.stroke();
            }
            ctx.restore();
          },
        ],
      },
    };
  }

  /**
   * The width a chart's own box leaves it (one column on a phone, two on a desktop).
   * @param {HTMLElement} box
   * @returns {number}
   */
  width(box) {
    return Math.max(200, box.clientWidth);
  }

  resize() {
    for (const { plot, canvas } of this.made.values()) {
      plot.setSize({ width: this.width(canvas), height: 180 });
    }
  }
}
