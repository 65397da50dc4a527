/*
 * Small DOM helpers shared by the chat page's scripts (app.js, figures.js, trust.js, export.js). No build step: each
 * script is a plain file loaded in order, and this one comes first.
 *
 * Everything here builds elements and sets text, never HTML strings: what the page shows comes from a
 * model that read the web, so it is untrusted.
 */
window.ChatDom = (() => {
  "use strict";

  const BLOB_URL_LIFETIME_MS = 60_000;

  /** The URL if it is absolute http(s), else null: no javascript:, data: or relative links from answers. */
  function httpUrl(value) {
    try {
      const url = new URL(value);
      return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
    } catch {
      return null;
    }
  }

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function button(className, text, title) {
    const node = element("button", className, text);
    node.type = "button";
    if (title) node.title = title;
    return node;
  }

  function externalLink(url, text, className) {
    const link = element("a", className, text);
    link.href = url;
    link.target = "_blank";
    link.rel = "noopener noreferrer";
    return link;
  }

  /** Save `text` as a file: a link to a Blob, clicked. The page's CSP allows it (no network involved).
   * The URL is revoked a while later, not at once: the browser reads the Blob after the click returns. */
  function download(filename, type, text) {
    const url = URL.createObjectURL(new Blob([text], { type }));
    const link = element("a");
    link.href = url;
    link.download = filename;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), BLOB_URL_LIFETIME_MS);
  }

  /** In the text of `root` outside the elements `skip` selects, replace each match of the global regular
   * expression `pattern` with the node `make(match)` returns. Text nodes are collected first, then
   * replaced, so the walk never visits what it inserts. */
  function replaceMatches(root, pattern, skip, make) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
      acceptNode: (node) =>
        node.parentElement && node.parentElement.closest(skip) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT,
    });
    const textNodes = [];
    while (walker.nextNode()) textNodes.push(walker.currentNode);
    for (const node of textNodes) {
      const text = node.nodeValue;
      const pieces = [];
      let from = 0;
      pattern.lastIndex = 0;
      for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
        pieces.push(document.createTextNode(text.slice(from, match.index)), make(match));
        from = match.index + match[0].length;
      }
      if (pieces.length === 0) continue;
      pieces.push(document.createTextNode(text.slice(from)));
      node.replaceWith(...pieces);
    }
  }

  return { httpUrl, element, button, externalLink, download, replaceMatches };
})();
