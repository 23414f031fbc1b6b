// A table wider than the screen scrolls inside its wrapper (made by the Material theme's own
// script): the wrapper takes keyboard focus then, so the arrow keys can scroll it, and is named
// for the section it is in. Tables that fit are left out of the tab order. Run again when the
// window's width changes. (Code blocks wrap their lines instead: extra.css.)
(function () {
  function label(wrapper) {
    for (let el = wrapper.previousElementSibling; el; el = el.previousElementSibling) {
      if (/^H[1-6]$/.test(el.tagName)) return "Table: " + el.textContent.replace("¶", "").trim();
    }
    return "Table";
  }
  function mark() {
    for (const wrapper of document.querySelectorAll(".md-typeset__scrollwrap")) {
      if (wrapper.scrollWidth > wrapper.clientWidth) {
        wrapper.setAttribute("tabindex", "0");
        wrapper.setAttribute("role", "region");
        wrapper.setAttribute("aria-label", label(wrapper));
      } else {
        wrapper.removeAttribute("tabindex");
        wrapper.removeAttribute("role");
        wrapper.removeAttribute("aria-label");
      }
    }
  }
  document.addEventListener("DOMContentLoaded", mark);
  window.addEventListener("load", mark);
  window.addEventListener("resize", mark);
})();
