'use strict';
// What the inbox's pages share (inbox.js, pins.js): the bearer token,
// kept in sessionStorage and sent in the Authorization header, never in a
// cookie; the periodic listing, of which only the latest answer is shown;
// the status line; and answers sent as JSON. Everything shown is set with
// textContent or as an attribute value, never parsed as HTML, unless a
// page says otherwise.
//
// verityPage({list, key, acting, render}) starts the page whose listing
// is GET list, whose items are the listing's member key, drawn by
// render(items), and whose user is shown as acting + who they are.
window.verityPage = function (opts) {
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
      resp = await fetch(opts.list, { headers: headers(false), cache: 'no-store', credentials: 'omit' });
    } catch (e) {
      if (mine === loads) setStatus('The inbox cannot be reached: ' + e, 'error');
      return;
    }
    if (mine !== loads) return;
    if (resp.status === 401 || resp.status === 403) {
      $('login').hidden = false;
      $('who').textContent = '';
      opts.render([]);
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
    $('who').textContent = opts.acting + data.you;
    document.body.dataset.auth = data.auth ? 'token' : 'none';
    document.body.dataset.you = data.you;
    opts.render(data[opts.key]);
    document.body.dataset.ready = 'true';
  }

  // post sends body as JSON to url and returns the response and its JSON
  // body, or null (the status line saying what could not be sent) when
  // it could not be sent.
  async function post(url, body, what) {
    try {
      const resp = await fetch(url, {
        method: 'POST', headers: headers(true), cache: 'no-store', credentials: 'omit', body: JSON.stringify(body),
      });
      return { resp: resp, body: await resp.json().catch(() => ({})) };
    } catch (e) {
      setStatus('The ' + what + ' could not be sent: ' + e, 'error');
      return null;
    }
  }

  // answered counts an answer once its outcome is shown, so that whoever
  // watches the count (a person's next glance, or a test) sees the page
  // as it now is.
  function answered(resp) {
    document.body.dataset.lastStatus = String(resp.status);
    document.body.dataset.answers = String(Number(document.body.dataset.answers) + 1);
  }

  // refused shows a refused answer's status and reason.
  function refused(resp, body) {
    setStatus('Refused (HTTP ' + resp.status + '): ' + (body.error || ''), 'error');
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

  function start() {
    load();
    setInterval(load, 5000);
  }

  return { $: $, el: el, setStatus: setStatus, load: load, post: post, answered: answered, refused: refused, start: start };
};
