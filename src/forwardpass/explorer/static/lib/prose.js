// Pieces §04–§08 share: links to a widget that carry its section's number as the heading shows it, and numbers with
// their units as each language writes them. The numbered prose and the presets are in told.js.

import { fmt, t } from "./i18n.js";

/** "§6 · title": a widget's (or an element's) place, numbered as its section's heading is ("6. What it costs" → 6) */
export function placeOf(target) {
  const section = target.closest("main > section[id]");
  const heading = section ? section.querySelector("h2").textContent : "";
  const number = (heading.match(/^\s*(\d+)/) || [])[1];
  const name = target.matches("[data-widget]") ? target.querySelector("h3").textContent
    : target.dataset.place ? t(target.dataset.place) : target.textContent;
  return { number, name, section: section ? section.id : null };
}

/** a link to `target` (a widget's frame or an element with an id): "§6 · its title" */
export function linkTo(target) {
  const { number, name } = placeOf(target);
  const a = document.createElement("a");
  a.href = `#${target.id || target.querySelector("h3").id}`;
  a.textContent = t("link.place", { n: number ?? "?", name });
  a.dataset.section = number ?? "";
  return a;
}

// ---- numbers as each language writes them (their units' words are in sections/cost.strings.js: unit.*) -----------
export const one = (x) => fmt.fixed(x, 1);
const short = (v) => (v >= 100 ? fmt.int(v) : v.toFixed(v >= 10 ? 1 : 2));

/** a rate per second, of bytes or FLOPs, in G or T, as both languages write it: 16.3 GB/s, 312 TFLOP/s */
export function perSecond(x, kind) {
  const [v, scale] = x >= 1e12 ? [x / 1e12, "T"] : [x / 1e9, "G"];
  return t(`unit.${kind}-per-s`, { v: short(v), scale });
}

/** bytes in binary units, KiB, MiB or GiB, to one decimal at most: 45 KiB, 4.5 MiB (GiB to two, as fmt.gib) */
export function bytes(n) {
  const tenth = (v) => v.toFixed(1).replace(/\.0$/, "");
  if (n < 2 ** 20) return t("unit.kib", { v: tenth(n / 2 ** 10) });
  if (n < 2 ** 30) return t("unit.mib", { v: tenth(n / 2 ** 20) });
  return fmt.gib(n / 2 ** 30);
}

/** a time: milliseconds under a second (to 0.1 ms under 10 ms), else seconds */
export function seconds(s) {
  if (s < 0.01) return t("unit.ms", { v: (s * 1000).toFixed(1) });
  return s < 1 ? t("unit.ms", { v: fmt.int(s * 1000) }) : t("unit.s", { v: s.toFixed(2) });
}

/** a moment (seconds since 1970) as this reader's clock shows it: 15:55:03 today, 2026-12-03 15:55:03 another day */
export function clock(epochS) {
  const d = new Date(epochS * 1000), two = (n) => String(n).padStart(2, "0");
  const time = `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
  const day = `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}`;
  return d.toDateString() === new Date().toDateString() ? time : `${day} ${time}`;
}
