'use strict';
// The changed tools of the approval inbox. The data is set with
// textContent, except each review's diff: the HTML fragment the server
// rendered (kernel/toolgate/pin's Review.HTML), in which every text is
// escaped and every invisible or look-alike character is written as a
// visible escape; the page's Content-Security-Policy runs no script but
// this file's.
(function () {
  const tokenKey = 'verity-inbox-token';
  const $ = (id) => document.getElementById(id);
  let token = sessionStorage.getItem(tokenKey) || '';

  function headers(json) {
    const h = {};
    if (token) h.Authorization = 'Bearer ' + token;
    if (json) h['Content-Type'] = 'application/json';
    return h;
  }

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function setStatus(text, kind) {
    const s = $('status');
    s.textContent = text;
    s.dataset.kind = kind || '';
  }

  let loads = 0;

  async function load() {
    const mine = ++loads;
    let resp;
    try {
      resp = await fetch('api/pins', { headers: headers(false), cache: 'no-store', credentials: 'omit' });
    } catch (e) {
      if (mine === loads) setStatus('The inbox cannot be reached: ' + e, 'error');
      return;
    }
    if (mine !== loads) return;
    if (resp.status === 401 || resp.status === 403) {
      $('login').hidden = false;
      $('who').textContent = '';
      render([]);
      setStatus(token ? 'The token was refused.' : 'A bearer token is needed.', 'error');
      document.body.dataset.auth = 'needed';
      document.body.dataset.ready = 'true';
      return;
    }
    if (!resp.ok) {
      setStatus('Listing failed: HTTP ' + resp.status, 'error');
      return;
    }
    const data = await resp.json();
    if (mine !== loads) return;
    $('login').hidden = !data.auth;
    $('who').textContent = 'Re-pinning as ' + data.you;
    document.body.dataset.auth = data.auth ? 'token' : 'none';
    document.body.dataset.you = data.you;
    render(data.reviews);
    document.body.dataset.ready = 'true';
  }

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
    let resp;
    let body = {};
    try {
      resp = await fetch('api/repin', {
        method: 'POST', headers: headers(true), cache: 'no-store', credentials: 'omit',
        body: JSON.stringify({ tool: r.tool, pinned: r.pinned, seen: r.seen, reason: reason }),
      });
      body = await resp.json().catch(() => ({}));
    } catch (e) {
      setStatus('The re-pin could not be sent: ' + e, 'error');
      return;
    }
    if (resp.ok) {
      setStatus('Re-pinned ' + r.tool + ' to ' + body.pinned + ': its calls run again.', 'ok');
    } else {
      setStatus('Refused (HTTP ' + resp.status + '): ' + (body.error || ''), 'error');
    }
    await load();
    document.body.dataset.lastStatus = String(resp.status);
    document.body.dataset.answers = String(Number(document.body.dataset.answers) + 1);
  }

  $('use-token').addEventListener('click', () => {
    token = $('token').value.trim();
    $('token').value = '';
    sessionStorage.setItem(tokenKey, token);
    load();
  });
  $('forget-token').addEventListener('click', () => {
    token = '';
    sessionStorage.removeItem(tokenKey);
    load();
  });
  load();
  setInterval(load, 5000);
})();
