"""MkDocs hook for the docs build: serve the diagrams' mermaid.js from the site itself.

Material for MkDocs draws ```` ```mermaid ```` blocks with mermaid.js, which it loads
from a CDN (unpkg) unless a global ``mermaid`` is already defined. The site ships its own
copy instead (``docs/javascripts/mermaid.min.js``, mermaid 11 from the npm registry, MIT,
its licence beside it), so that the diagrams render offline (``mkdocs serve`` without a
network, a site behind a firewall) and no page calls a third-party host. The file is
3.5 MB: this hook adds its ``<script>`` only to the pages that hold a diagram, not to
every page as ``extra_javascript`` would.

Trade-off: a hand-written hook of a few lines rather than a plugin (mkdocs-mermaid2 loads
from a CDN too); to update mermaid, replace the file with a newer ``dist/mermaid.min.js``
(``npm pack mermaid@11``).
"""

from __future__ import annotations

from typing import Any

from mkdocs.utils import get_relative_url

SCRIPT = "javascripts/mermaid.min.js"


def on_post_page(output: str, *, page: Any, config: Any) -> str:
    """Load the site's mermaid.js on a page that has a diagram, before ``</body>``.

    Material's bundle, earlier in the page, looks for ``mermaid`` once the document has
    loaded, after every script of the page ran: it then uses this one.
    """
    if 'class="mermaid"' not in output or "</body>" not in output:
        return output
    src = get_relative_url(SCRIPT, page.url)
    tag = f'<script src="{src}"></script>\n'
    head, _, tail = output.rpartition("</body>")
    return f"{head}{tag}</body>{tail}"
