'use strict';
// The changed tools of the approval inbox (its shared part: page.js).
// The data is set with textContent, except each review's diff: the HTML
// fragment the server rendered (kernel/toolgate/pin's Review.HTML), in
// which every text is escaped and every invisible or look-alike
// character is written as a visible escape; the page's
// Content-Security-Policy runs no script but its own files'.
(function () {
  const page = window.verityPage({ list: 'api/pins', key: 'reviews', acting: 'Re-pinning as ', render: render });
  const { $, el, setStatus, load } = page;

  function render(list) {
    const main = $('reviews');
    const typed = {};
    for (const a of main.querySelectorAll('article.review')) {
      typed[a.dataset.tool] = a.querySelector('input.reason').value;
    }
    main.replaceChildren();
    $('empty').hidden = list.length > 0;
    document.body.dataset.count = String(list.length);
    for (const r of list) main.appendChild(card(r, typed[r.tool] || ''));
  }

  function card(r, reason) {
    const a = el('article', 'review change-' + r.change);
    a.dataset.tool = r.tool;
    a.dataset.seen = r.seen;
    const h = el('h2');
    h.append(el('span', 'tool', r.tool), ' ', el('span', 'change', r.change));
    a.append(h);
    const dl = el('dl');
    const row = (k, v, cls) => dl.append(el('dt', null, k), el('dd', cls, v));
    row('server', r.server, 'server');
    row('pinned', r.pinned || 'none', 'pinned');
    row('listed', r.seen || 'none (no longer listed)', 'seen');
    if (r.asked.length) row('refused calls of', r.asked.map((x) => x || '(anonymous)').join(', '), 'asked');
    a.append(dl);
    const diff = el('div', 'diff');
    diff.innerHTML = r.html; // the server's escaped rendering: see above
    a.append(diff);

    const f = el('div', 'answer');
    const input = el('input', 'reason');
    input.type = 'text';
    input.maxLength = 1000;
    input.placeholder = 'Reason (recorded with the re-pin)';
    input.value = reason;
    const ok = el('button', 'approve', r.pinned ? 'Re-pin to the listed definition' : 'Pin the listed definition');
    ok.type = 'button';
    ok.disabled = !r.seen;
    ok.addEventListener('click', () => send(r, input.value));
    f.append(input, ok);
    if (!r.can_approve) f.append(el('span', 'note', 'You may not re-pin this tool (not an approver, or your call asked for it).'));
    a.append(f);
    return a;
  }

  async function send(r, reason) {
    const sent = await page.post('api/repin', { tool: r.tool, pinned: r.pinned, seen: r.seen, reason: reason }, 're-pin');
    if (!sent) return;
    const { resp, body } = sent;
    if (resp.ok) {
      setStatus('Re-pinned ' + r.tool + ' to ' + body.pinned + ': its calls run again.', 'ok');
    } else {
      page.refused(resp, body);
    }
    await load();
    page.answered(resp);
  }

  page.start();
})();
