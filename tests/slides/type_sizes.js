() => {
  const slide = Reveal.getCurrentSlide();
  const scale = Reveal.getScale();
  const zoomOf = e => { let z = 1; for (let a = e; a && a !== slide.parentElement; a = a.parentElement) {
      const v = parseFloat(getComputedStyle(a).zoom); if (v) z *= v; } return z; };
  const shown = e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0 &&
      getComputedStyle(e).visibility !== "hidden"; };
  const prose = [], code = [], seen = new Set();
  const walker = document.createTreeWalker(slide, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (!node.textContent.trim()) continue;
    let e = node.parentElement;
    if (!e || e.closest("aside.notes, script, style, svg")) continue;
    e = e.closest(".MathJax, .MathJax_CHTML, mjx-container") || e;
    if (seen.has(e) || !shown(e)) continue;
    seen.add(e);
    const px = Math.round(10 * parseFloat(getComputedStyle(e).fontSize) * zoomOf(e)) / 10;
    const item = [px, e.tagName + ": " + node.textContent.trim().slice(0, 40)];
    (e.closest("pre, code, table, .jp-CodeCell") ? code : prose).push(item);
  }
  let lines = 0;
  slide.querySelectorAll(".jp-InputArea pre").forEach(pre => {
    if (!shown(pre)) return;
    const style = getComputedStyle(pre);
    const inner = pre.clientHeight - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom);
    lines += Math.round(inner / parseFloat(style.lineHeight));
  });
  const figure = [];
  const glyphPx = (element, size) => {
    const m = element.getScreenCTM();
    return size * Math.sqrt(Math.abs(m.a * m.d - m.b * m.c));
  };
  const figureText = (svg, label) => {
    svg.querySelectorAll("g[id^='text_'], text").forEach(group => {
      let px;
      if (group.tagName.toLowerCase() === "text") px = glyphPx(group, parseFloat(getComputedStyle(group).fontSize));
      else {
        const glyph = group.querySelector("use");
        if (!glyph) return;
        px = glyphPx(glyph, 100);  // matplotlib draws a text's glyphs at font size 100, then scales them
      }
      const comment = [...group.childNodes].find(n => n.nodeType === 8);
      figure.push([Math.round(10 * px) / 10, label + ": " + (comment ? comment.textContent : group.textContent).trim().slice(0, 30)]);
    });
  };
  slide.querySelectorAll(".jp-OutputArea-output img, .jp-OutputArea-output svg").forEach((img, number) => {
    if (!shown(img)) return;
    const r = img.getBoundingClientRect();
    let svg = img;
    if (img.tagName.toLowerCase() === "img") {
      const match = img.src.match(/^data:image\/svg\+xml;base64,(.*)$/);
      if (!match) return;
      svg = new DOMParser().parseFromString(new TextDecoder().decode(Uint8Array.from(atob(match[1]), c => c.charCodeAt(0))),
                                           "image/svg+xml").documentElement;
    } else svg = img.cloneNode(true);
    // drawn off the slide at the size it has on the canvas, so the screen's pixels are canvas pixels
    const box = document.createElement("div");
    box.style.cssText = "position: absolute; left: -5000px; top: 0;";
    svg.setAttribute("width", r.width / scale); svg.setAttribute("height", r.height / scale);
    svg.setAttribute("preserveAspectRatio", "xMidYMid meet");
    box.appendChild(svg); document.body.appendChild(box);
    figureText(svg, "figure " + (number + 1));
    box.remove();
  });
  const images = slide.querySelectorAll(".jp-OutputArea-output img, .jp-OutputArea-output svg").length;
  return {prose, code, lines, figure, images, text: slide.innerText.slice(0, 70)};
}
