'use strict';
// The approval inbox (its shared part: page.js). Everything shown is set
// with textContent or as an attribute value, never parsed as HTML: the
// arguments were written by a model and may hold anything.
(function () {
  const page = window.verityPage({ list: 'api/requests', key: 'requests', acting: 'Answering as ', render: render });
  const { $, el, setStatus, load } = page;

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
    if (r.replica) row('held at', r.replica, 'replica'); // shared approvals: the replica whose gate holds the call
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
    const sent = await page.post('api/answer', { id: id, decision: decision, reason: reason }, 'answer');
    if (!sent) return;
    const { resp, body } = sent;
    if (resp.ok && decision === 'approve') {
      setStatus(body.granted ? 'Approved: the call may run.' : 'Approved; still awaiting ' + body.awaiting.join(', ') + '.', 'ok');
    } else if (resp.ok) {
      setStatus('Denied.', 'ok');
    } else {
      page.refused(resp, body);
    }
    await load();
    page.answered(resp);
  }

  // Clearing a label (POST api/declassify, inbox_labels.go).
  async function declassify() {
    const body = { caller: $('dc-caller').value, label: $('dc-label').value, reason: $('dc-reason').value };
    const sent = await page.post('api/declassify', body, 'label clearing');
    if (!sent) return;
    const { resp, body: out } = sent;
    if (resp.ok) {
      setStatus('Cleared ' + out.label + ' from ' + out.caller + '.', 'ok');
      $('dc-reason').value = '';
    } else {
      page.refused(resp, out);
    }
    page.answered(resp);
  }
  $('dc-send').addEventListener('click', declassify);

  page.start();
})();
