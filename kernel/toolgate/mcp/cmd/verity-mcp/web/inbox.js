'use strict';
// The approval inbox. Everything shown is set with textContent or as an
// attribute value, never parsed as HTML: the arguments were written by a
// model and may hold anything.
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

  // loads counts the listings asked for; only the latest is shown, so a
  // periodic listing that answers late never paints over a newer one.
  let loads = 0;

  async function load() {
    const mine = ++loads;
    let resp;
    try {
      resp = await fetch('api/requests', { headers: headers(false), cache: 'no-store', credentials: 'omit' });
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
    $('who').textContent = 'Answering as ' + data.you;
    document.body.dataset.auth = data.auth ? 'token' : 'none';
    document.body.dataset.you = data.you;
    render(data.requests);
    document.body.dataset.ready = 'true';
  }

  function render(list) {
    const main = $('requests');
    const typed = {};
    for (const a of main.querySelectorAll('article.request')) {
      typed[a.dataset.id] = a.querySelector('input.reason').value;
    }
    main.replaceChildren();
    $('empty').hidden = list.length > 0;
    document.body.dataset.count = String(list.length);
    for (const r of list) main.appendChild(card(r, typed[r.id] || ''));
  }

  function card(r, reason) {
    const a = el('article', 'request tier-' + String(r.tier).toLowerCase());
    a.dataset.id = r.id;
    a.dataset.tool = r.tool;
    const h = el('h2');
    h.append(el('span', 'tool', r.tool), ' ', el('span', 'tier', r.tier));
    a.append(h);

    const approved = r.approved;
    const dl = el('dl');
    const row = (k, v, cls) => dl.append(el('dt', null, k), el('dd', cls, v));
    row('caller', r.caller, 'caller');
    row('asked', new Date(r.asked).toISOString(), 'asked');
    if (r.expires) row('expires', r.expires, 'expires');
    row('approvers', r.approvers.join(', '), 'approvers');
    row('approvals', r.given + ' of ' + r.needed + (r.needed === 1 ? ' approval' : ' approvals'), 'count');
    row('approved by', approved.length ? approved.join(', ') : 'nobody yet', 'approved');
    row('awaiting', r.awaiting.join(', '), 'awaiting');
    a.append(dl);
    if (r.approvers.length > 1) {
      const more = r.needed - r.given;
      a.append(el('p', 'second', r.given
        ? 'Approved ' + r.given + ' of ' + r.needed + ': it needs ' + more + ' more ' + (more === 1 ? 'approval' : 'approvals') +
          (more === 1 ? ', by' : ', each by') + ' another person (' + r.awaiting.join(', ') + ').'
        : 'Needs ' + r.needed + ' approvals, each by a different person.'));
    }
    a.append(el('h3', null, 'Arguments'), el('pre', 'arguments', r.arguments), el('p', 'question', r.question));

    const f = el('div', 'answer');
    const input = el('input', 'reason');
    input.type = 'text';
    input.maxLength = 1000;
    input.placeholder = 'Reason (recorded with your answer)';
    input.value = reason;
    const ok = el('button', 'approve', 'Approve');
    ok.type = 'button';
    const no = el('button', 'deny', 'Deny');
    no.type = 'button';
    ok.addEventListener('click', () => send(r.id, 'approve', input.value));
    no.addEventListener('click', () => send(r.id, 'deny', input.value));
    f.append(input, ok, no);
    if (!r.can_answer) f.append(el('span', 'note', 'You are not one of the approvers this request awaits.'));
    a.append(f);
    return a;
  }

  async function send(id, decision, reason) {
    let resp;
    let body = {};
    try {
      resp = await fetch('api/answer', {
        method: 'POST', headers: headers(true), cache: 'no-store', credentials: 'omit',
        body: JSON.stringify({ id: id, decision: decision, reason: reason }),
      });
      body = await resp.json().catch(() => ({}));
    } catch (e) {
      setStatus('The answer could not be sent: ' + e, 'error');
      return;
    }
    if (resp.ok && decision === 'approve') {
      setStatus(body.granted ? 'Approved: the call may run.' : 'Approved; still awaiting ' + body.awaiting.join(', ') + '.', 'ok');
    } else if (resp.ok) {
      setStatus('Denied.', 'ok');
    } else {
      setStatus('Refused (HTTP ' + resp.status + '): ' + (body.error || ''), 'error');
    }
    await load();
    // Counted once the list is shown again, so that whoever watches the
    // count (a person's next glance, or a test) sees the list as it now is.
    document.body.dataset.lastStatus = String(resp.status);
    document.body.dataset.answers = String(Number(document.body.dataset.answers) + 1);
  }

  // Clearing a label (POST api/declassify, inbox_labels.go).
  async function declassify() {
    const body = { caller: $('dc-caller').value, label: $('dc-label').value, reason: $('dc-reason').value };
    let resp;
    let out = {};
    try {
      resp = await fetch('api/declassify', {
        method: 'POST', headers: headers(true), cache: 'no-store', credentials: 'omit', body: JSON.stringify(body),
      });
      out = await resp.json().catch(() => ({}));
    } catch (e) {
      setStatus('The label could not be cleared: ' + e, 'error');
      return;
    }
    if (resp.ok) {
      setStatus('Cleared ' + out.label + ' from ' + out.caller + '.', 'ok');
      $('dc-reason').value = '';
    } else {
      setStatus('Refused (HTTP ' + resp.status + '): ' + (out.error || ''), 'error');
    }
    document.body.dataset.lastStatus = String(resp.status);
    document.body.dataset.answers = String(Number(document.body.dataset.answers) + 1);
  }
  $('dc-send').addEventListener('click', declassify);

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
