// A page opened with ?slides in its address reads as slides for projecting: the title and each
// "##" section fill the screen, the site's chrome is hidden, and the arrow keys move between them.
(function () {
  if (!new URLSearchParams(window.location.search).has("slides")) return;
  const article = document.querySelector("article.md-content__inner");
  if (!article) return;
  document.body.classList.add("slides");
  const slides = [];
  let current = null;
  for (const node of Array.from(article.childNodes)) {
    if (node.nodeName === "H1" || node.nodeName === "H2") {
      current = document.createElement("section");
      current.className = "slide";
      article.insertBefore(current, node);
      slides.push(current);
    }
    if (current) current.appendChild(node);
  }
  const step = { ArrowRight: 1, ArrowDown: 1, PageDown: 1, " ": 1, ArrowLeft: -1, ArrowUp: -1, PageUp: -1 };
  document.addEventListener("keydown", function (event) {
    if (!(event.key in step) || !slides.length) return;
    event.preventDefault();
    const tops = slides.map(function (s) { return Math.abs(s.getBoundingClientRect().top); });
    const here = tops.indexOf(Math.min.apply(null, tops));
    const next = Math.max(0, Math.min(slides.length - 1, here + step[event.key]));
    slides[next].scrollIntoView();
  });
})();
