/**
 * The status page: one self-contained HTML document (no external assets) that
 * renders the fleet from `/api/events` as it changes — each host's template
 * and component versions, its state, the step it runs (or the drain it waits on) and its last error, the
 * rollout in progress, and a timeline; in cluster mode also the cluster's view
 * (each Node's Ready and WinfleetReady, the upgrader DaemonSets' rollout, recent
 * Events), polled from `/api/cluster`. Every value is set with textContent.
 */

const STYLE = `
:root { color-scheme: light dark; --ok: #1a7f37; --bad: #cf222e; --busy: #9a6700; --muted: #6e7781; }
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5rem 2rem; }
h1 { font-size: 1.3rem; margin: 0 0 .2rem; } .sub { color: var(--muted); margin-bottom: 1rem; }
#rollout { padding: .5rem .75rem; border-radius: 6px; margin-bottom: 1rem; background: #8882; }
table { border-collapse: collapse; width: 100%; margin-bottom: 1.5rem; }
th, td { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid #8884; vertical-align: top; }
th { font-weight: 600; color: var(--muted); }
.state { font-weight: 600; } .state.converged { color: var(--ok); } .state.failed, .state.crashed { color: var(--bad); }
.state.applying, .state.starting, .state.rebooting, .state.draining { color: var(--busy); }
.comp { display: inline-block; margin: 0 .4rem .2rem 0; padding: 0 .35rem; border-radius: 4px; background: #8882; font-family: ui-monospace, monospace; font-size: 12px; }
.error { color: var(--bad); white-space: pre-wrap; font-family: ui-monospace, monospace; font-size: 12px; }
.step { font-family: ui-monospace, monospace; font-size: 12px; }
#timeline { list-style: none; padding: 0; font-size: 13px; max-height: 22rem; overflow: auto; }
#timeline li { padding: .15rem 0; border-bottom: 1px dotted #8883; } #timeline time { color: var(--muted); margin-right: .5rem; }
.kind-failed { color: var(--bad); } .kind-converged { color: var(--ok); }
`;

const SCRIPT = `
const hosts = new Map();
let status = null;
const el = (tag, text, cls) => { const e = document.createElement(tag); if (text !== undefined) e.textContent = text; if (cls) e.className = cls; return e; };
function renderHost(h) {
  let row = document.getElementById('host-' + h.name);
  if (!row) { row = el('tr'); row.id = 'host-' + h.name; row.dataset.host = h.name; document.getElementById('hosts').appendChild(row); }
  row.replaceChildren();
  row.appendChild(el('td', h.name));
  row.appendChild(el('td', h.state, 'state ' + h.state));
  const tpl = h.template ? h.template.name + ' ' + h.template.version : '—';
  const want = h.desired.name + ' ' + h.desired.version;
  row.appendChild(el('td', tpl === want ? tpl : tpl + ' → ' + want, 'template'));
  const comps = el('td');
  for (const c of h.components) comps.appendChild(el('span', c.name + ' ' + c.version + (c.state === 'installed' ? '' : ' (' + c.state + ')'), 'comp'));
  row.appendChild(comps);
  const now = el('td');
  if (h.drain) now.appendChild(el('div', 'draining: ' + h.drain.evicted + ' evicted' + (h.drain.waitingFor.length ? ', waiting for ' + h.drain.waitingFor.join('; ') : ''), 'step drain'));
  else if (h.step) now.appendChild(el('div', h.step.component + ' ' + h.step.phase + ': ' + h.step.title, 'step'));
  if (h.lastError) now.appendChild(el('div', 'last error: ' + h.lastError.component + ' ' + h.lastError.phase + ': ' + h.lastError.command + ' exited ' + h.lastError.exitCode + (h.lastError.errorTail ? '\\n' + h.lastError.errorTail.trim().split('\\n').slice(-4).join('\\n') : ''), 'error'));
  row.appendChild(now);
}
function addEvent(e, prepend) {
  const li = el('li'); li.className = 'kind-' + e.kind;
  li.appendChild(el('time', new Date(e.at).toLocaleTimeString()));
  li.appendChild(el('strong', e.host + ' '));
  li.appendChild(el('span', e.text));
  const list = document.getElementById('timeline');
  prepend ? list.prepend(li) : list.appendChild(li);
  while (list.children.length > 200) list.lastChild.remove();
}
function renderDesired(s) {
  document.getElementById('stack').textContent = 'stack ' + s.stack + ' — desired ' + s.desired.template + ' ' + s.desired.templateVersion + ', ' + s.desired.hosts + ' hosts, maxUnavailable ' + s.desired.maxUnavailable;
}
function renderSnapshot(s) {
  status = s;
  renderDesired(s);
  for (const h of s.hosts) renderHost(h);
  document.getElementById('timeline').replaceChildren();
  for (const e of [...s.timeline].reverse()) addEvent(e, false);
  if (s.rollout.running) document.getElementById('rollout').textContent = 'rollout in progress';
}
const source = new EventSource('/api/events');
source.onmessage = (m) => {
  const e = JSON.parse(m.data);
  if (e.type === 'snapshot') renderSnapshot(e.status);
  else if (e.type === 'host') renderHost(e.host);
  else if (e.type === 'timeline') addEvent(e.event, true);
  else if (e.type === 'rollout') {
    document.getElementById('rollout').textContent = e.text;
    if (e.state === 'started') fetch('/api/status').then((r) => r.json()).then(renderDesired, () => {});
  }
  document.getElementById('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
};
function renderCluster(c) {
  document.getElementById('cluster').hidden = false;
  const rows = (id, items, cells) => { const body = document.getElementById(id); body.replaceChildren(); for (const it of items) { const tr = el('tr'); for (const [text, cls] of cells(it)) tr.appendChild(el('td', String(text), cls)); body.appendChild(tr); } };
  const cond = (s) => [s, s === 'True' ? 'state converged' : 'state failed'];
  rows('nodes', c.nodes, (n) => [[n.name], cond(n.ready), cond(n.winfleetReady), [n.template]]);
  rows('daemonsets', c.daemonSets, (d) => [[d.name], [d.desired], [d.updated], [d.ready], [d.unavailable, d.unavailable > 0 ? 'state applying' : '']]);
  rows('events', c.events, (e) => [[e.at ? new Date(e.at).toLocaleTimeString() : ''], [e.object], [e.reason, e.type === 'Warning' ? 'kind-failed' : ''], [e.message]]);
}
function pollCluster() {
  fetch('/api/cluster').then((r) => (r.ok ? r.json().then(renderCluster) : r.status === 404 ? 'none' : null), () => null).then((none) => { if (none !== 'none') setTimeout(pollCluster, 2000); });
}
pollCluster();
source.onerror = () => { document.getElementById('updated').textContent = 'disconnected: is the fleet still running?'; };
`;

/** The page. */
export function statusPage(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>winfleet — local fleet</title>
<style>${STYLE}</style>
</head>
<body>
<h1>winfleet local fleet</h1>
<div class="sub"><span id="stack">connecting…</span> · <span id="updated"></span></div>
<div id="rollout">no rollout yet</div>
<table>
<thead><tr><th>host</th><th>state</th><th>template</th><th>components</th><th>step / last error</th></tr></thead>
<tbody id="hosts"></tbody>
</table>
<section id="cluster" hidden>
<h2>cluster</h2>
<table>
<thead><tr><th>node</th><th>Ready</th><th>WinfleetReady</th><th>template</th></tr></thead>
<tbody id="nodes"></tbody>
</table>
<table>
<thead><tr><th>upgrader DaemonSet</th><th>desired</th><th>updated</th><th>ready</th><th>unavailable</th></tr></thead>
<tbody id="daemonsets"></tbody>
</table>
<table>
<thead><tr><th>time</th><th>object</th><th>reason</th><th>message</th></tr></thead>
<tbody id="events"></tbody>
</table>
</section>
<h2>timeline</h2>
<ul id="timeline"></ul>
<script>${SCRIPT}</script>
</body>
</html>
`;
}
