"""Glossary marks on the HTML site that a keyboard, a touch screen and a screen reader reach.

In JupyterLab a marked term stays a plain ``<abbr title>``: the sanitizer keeps nothing else.
On the site, where the page is ours, each mark becomes a button (so Tab stops on it and a tap
focuses it) described by its definition (``aria-describedby``, read aloud by a screen reader
when the button gets focus) and shown beside it on hover and on focus. WCAG 2.1, success
criterion 1.4.13 "Content on Hover or Focus" (https://www.w3.org/WAI/WCAG21/Understanding/content-on-hover-or-focus.html)
asks that such content be dismissable (Esc hides it without moving focus or pointer),
hoverable (the pointer can move onto it without it vanishing: it sits inside the term's box)
and persistent (it stays until dismissed, or until hover and focus leave). The native
``title`` tooltip meets none of these, so the site drops it.
"""
from __future__ import annotations

import html
import re

_MARK = re.compile(r"<abbr\b([^>]*)>(.*?)</abbr>", re.DOTALL)
_ATTRIBUTE = re.compile(r"""([a-zA-Z-]+)=(?:"([^"]*)"|'([^']*)')""")  # html5lib quotes with ' a value holding "
GLOSSARY_CLASS = "glossario"

STYLE = """<style id="termos-do-glossario">
  .termo { position: relative; display: inline; }
  .termo-botao { font: inherit; color: inherit; background: none; border: 0; padding: 0; margin: 0;
    cursor: help; text-decoration: underline dotted; text-underline-offset: 0.15em; }
  .termo-botao:focus-visible { outline: 2px solid #1f6feb; outline-offset: 2px; border-radius: 2px; }
  .termo-def { display: none; position: absolute; left: 0; top: 100%; z-index: 10; width: max-content;
    max-width: min(28rem, 90vw); padding: 0.5rem 0.75rem; background: #fffbe6; color: #1b1f24;
    border: 1px solid #8c6d1f; border-radius: 4px; box-shadow: 0 2px 6px rgba(0, 0, 0, 0.2);
    font-size: 0.9rem; font-weight: normal; font-style: normal; line-height: 1.4; white-space: normal; }
  .termo:hover .termo-def, .termo:focus-within .termo-def { display: block; }
  .termo.dispensado .termo-def { display: none; }
</style>"""

# Esc hides what is shown without moving focus; the definition comes back on the next hover or
# focus. A definition that would cross the window's right edge is moved left to fit.
SCRIPT = """<script id="termos-do-glossario-esc">
document.addEventListener("keydown", function (event) {
  if (event.key !== "Escape") return;
  document.querySelectorAll(".termo:hover, .termo:focus-within").forEach(function (term) {
    term.classList.add("dispensado");
  });
});
// Keep the definition inside the window: a term near the right edge (or on a phone) moves it left.
["mouseover", "focusin"].forEach(function (kind) {
  document.addEventListener(kind, function (event) {
    var term = event.target.closest && event.target.closest(".termo");
    var box = term && term.querySelector(".termo-def");
    if (!box) return;
    box.style.left = "0px";
    var rect = box.getBoundingClientRect(), margin = 8;
    var shift = Math.max(0, rect.right - (document.documentElement.clientWidth - margin));
    shift = Math.min(shift, Math.max(0, rect.left - margin));
    box.style.left = (-shift) + "px";
  }, true);
});
["mouseleave", "focusout"].forEach(function (kind) {
  document.addEventListener(kind, function (event) {
    var term = event.target.closest && event.target.closest(".termo");
    if (term) term.classList.remove("dispensado");
  }, true);
});
</script>"""


def _attributes(text: str) -> dict[str, str]:
    return {name: html.unescape(double or single) for name, double, single in _ATTRIBUTE.findall(text)}


def accessible_terms(page: str) -> tuple[str, int]:
    """The page with each glossary mark turned into a focusable, described, dismissable term;
    and how many marks it turned. Marks of other classes, and pages without marks, are left as
    they are (no style or script added)."""
    count = 0

    def replace(match: re.Match) -> str:
        nonlocal count
        attributes = _attributes(match.group(1))
        definition = attributes.get("title")
        if GLOSSARY_CLASS not in attributes.get("class", "").split() or not definition:
            return match.group(0)
        count += 1
        term_id = f"termo-def-{count}"
        return (f'<span class="termo"><button type="button" class="termo-botao" aria-describedby="{term_id}">'
                f'{match.group(2)}</button><span class="termo-def" role="tooltip" id="{term_id}">'
                f'{html.escape(definition, quote=False)}</span></span>')

    page = _MARK.sub(replace, page)
    if count and "</head>" in page:
        page = page.replace("</head>", f"{STYLE}\n{SCRIPT}\n</head>", 1)
    return page, count
