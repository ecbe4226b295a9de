// Injected by the tests into a report.html opened in headless Chromium: measures every
// chart as laid out and writes what is wrong as JSON into a new pre element, which
// the test reads from the dumped DOM (the element with that id). Not part of any report
// wirebench writes.
window.addEventListener("load", () => {
  const problems = [];
  const box = (e) => e.getBoundingClientRect();
  const meets = (a, b) =>
    Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 &&
    Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
  const unit = /(\bs\b|seconds|\bus\b|\bms\b|%|\/s|bytes|\bB\b|bit|fps|frames|percentile|\brun\b)/;
  document.querySelectorAll("svg").forEach((svg, k) => {
    const name = svg.getAttribute("aria-label") || "chart " + k;
    const texts = [...svg.querySelectorAll("text")].filter((t) => t.textContent.trim() !== "");
    // Text on text.
    for (let i = 0; i < texts.length; i++) {
      for (let j = i + 1; j < texts.length; j++) {
        if (meets(box(texts[i]), box(texts[j]))) {
          problems.push(`${name}: "${texts[i].textContent}" overlaps "${texts[j].textContent}"`);
        }
      }
    }
    // A legend entry (its sample, a short line or a 10 px square, and its name) on a data
    // point or a bar.
    const data = [...svg.querySelectorAll("circle")].concat(
      [...svg.querySelectorAll("rect")].filter((r) => r.querySelector("title"))
    );
    for (const t of texts) {
      const p = t.previousElementSibling;
      if (!p) continue;
      const line = p.tagName === "line" && +p.getAttribute("x2") - +p.getAttribute("x1") === 18;
      const square = p.tagName === "rect" && p.getAttribute("width") === "10" && p.getAttribute("height") === "10";
      if (!line && !square) continue;
      for (const e of [p, t]) {
        const hit = data.find((d) => meets(box(e), box(d)));
        if (hit) {
          problems.push(`${name}: the legend entry "${t.textContent}" hides a data point (${hit.textContent || hit.tagName})`);
          break;
        }
      }
    }
    // Units on the axes: the rotated y labels, and the x label under the plot.
    const rotated = texts.filter((t) => (t.getAttribute("transform") || "").includes("rotate"));
    for (const y of rotated) {
      if (!unit.test(y.textContent)) problems.push(`${name}: y axis "${y.textContent}" names no unit`);
    }
    const h = +svg.getAttribute("height");
    const xl = texts.find((t) => t.getAttribute("font-size") === "12" && !t.getAttribute("transform") && +t.getAttribute("y") > h - 12);
    if (xl && !unit.test(xl.textContent)) problems.push(`${name}: x axis "${xl.textContent}" names no unit`);
  });
  const out = document.createElement("pre");
  out.id = "chart-check";
  out.textContent = JSON.stringify({ charts: document.querySelectorAll("svg").length, problems });
  document.body.appendChild(out);
});
