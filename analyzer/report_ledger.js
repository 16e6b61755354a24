/* report_ledger.js - the memory ledger's panel of gputrace's HTML report
 * (report.js draws the rest, and hands this file its helpers as H). Carried
 * in the binary beside report.js and put before it in the page. */
/* The memory ledger (summary's "ledger"): per device, at the peak and at
 * exit, what the process held by who holds it, beside NVML's figure for
 * the process, other processes and what was free. One bar per instant on
 * the device's total; what NVML did not measure at an instant stays
 * unshaded and says so. */
var GT_LEDGER_COLOR = {framework: '#4e79a7', direct: '#76b7b2', library: '#b07aa1', graph_capture: '#59a14f', graph_memory: '#8cd17d', pool: '#f28e2b', modules: '#edc948',
  context: '#9c755f', unaccounted: '#e15759', other: '#bab0ac', driver: '#d4a6c8'};
/* What the legend calls each kind (the buckets' own names say which library or pool) */
var GT_LEDGER_LABEL = {framework: 'framework allocator', direct: 'program\u2019s own calls', library: 'libraries',
  graph_capture: 'CUDA graphs\u2019 pools', graph_memory: 'graph memory (driver)', pool: 'stream-ordered pool',
  modules: 'kernel modules', context: 'CUDA context and driver', unaccounted: 'unaccounted', other: 'other processes',
  driver: 'driver and firmware'};
function gtLedgerPanel(H, parent, led, id) {
  'use strict';
  var el = H.el, sv = H.sv, tip = H.tip, fmtBytes = H.fmtBytes, fmtNs = H.fmtNs, table = H.table, legend = H.legend;
  if (!led || !led.length) return;
  var box = el('div', {'class': 'panel ledger-panel', id: id}, parent);
  el('h3', {}, box, 'Memory ledger: what the process held, by who holds it');
  var drawn = {};   /* the kinds the bars show: the legend names those only */
  led.forEach(function (dev) {
    var insts = (dev.instants || []).slice().sort(function (a, b) { return a.instant === 'peak' ? -1 : b.instant === 'peak' ? 1 : 0; });
    insts.forEach(function (x) {
      el('h4', {}, box, 'GPU ' + dev.device + ' at ' + x.instant + ' (' + fmtNs(x.t_ns) + ')');
      var parts = (x.buckets || []).map(function (b) {
        var note = b.kind === 'pool' ? (b.reservation_known ? 'reserved; ' + fmtBytes(b.in_use_bytes) + ' in use' :
          'in use: its reservation is not in the trace') : b.kind === 'context' ? 'measured at the start' :
          b.kind === 'modules' ? 'measured after the first iteration' : b.kind === 'framework' ? 'segments of the framework\u2019s caching allocator' :
          b.kind === 'library' ? 'allocated by this library (the library on the call stack)' :
          b.kind === 'graph_capture' ? 'allocated while a CUDA graph was captured (a graph\u2019s private pool)' :
          b.kind === 'graph_memory' ? 'held by the driver for graphs\u2019 allocation nodes, until trimmed' : b.kind === 'direct' ? 'the program\u2019s own calls' : '';
        return {name: b.name, kind: b.kind, bytes: b.bytes, note: note};
      });
      if (typeof x.unaccounted_bytes === 'number' && x.unaccounted_bytes > 0)
        parts.push({name: 'unaccounted', kind: 'unaccounted', bytes: x.unaccounted_bytes,
          note: 'in NVML\u2019s figure for the process, in no bucket (driver memory no traced call made)'});
      if (typeof x.other_processes_bytes === 'number')
        parts.push({name: 'other processes', kind: 'other', bytes: x.other_processes_bytes, note: 'NVML' +
          (typeof x.driver_bytes === 'number' ? ': the processes it lists' : ', with the driver\u2019s own memory (not told apart in this trace)')});
      if (typeof x.driver_bytes === 'number' && x.driver_bytes > 0)
        parts.push({name: 'driver and firmware', kind: 'driver', bytes: x.driver_bytes, note: 'NVML: no process\u2019s' +
          (typeof x.driver_reserved_bytes === 'number' && x.driver_reserved_bytes < x.driver_bytes ? ' (' +
           fmtBytes(x.driver_reserved_bytes) + ' set aside, ' + fmtBytes(x.driver_bytes - x.driver_reserved_bytes) + ' in use)' : '')});
      var total = dev.total_bytes || 0, sum = 0;
      parts.forEach(function (q) { sum += Math.max(0, q.bytes); });
      var scale = Math.max(total, sum, 1);
      var W = Math.max(300, Math.round(box.clientWidth || 960)), H = 26;
      var bar = sv('svg', {viewBox: '0 0 ' + W + ' ' + H, 'class': 'chart ledger-bar', role: 'img',
        'data-instant': x.instant, 'data-device': dev.device}, el('div', {'class': 'chartbox'}, box));
      var at = 0;
      parts.forEach(function (q) {
        if (q.bytes > 0) drawn[q.kind] = true;
        var w = Math.max(0, q.bytes) / scale * W;
        tip(sv('rect', {x: at.toFixed(2), y: 2, width: w.toFixed(2), height: H - 4, fill: GT_LEDGER_COLOR[q.kind] || '#888',
          'class': 'ledger-bucket', 'data-name': q.name, 'data-kind': q.kind, 'data-bytes': q.bytes}, bar), q.name + ': ' + fmtBytes(q.bytes));
        at += w;
      });
      var rest = typeof x.free_bytes === 'number' ? 'free ' + fmtBytes(x.free_bytes) : 'not measured at this instant';
      if (at < W) tip(sv('rect', {x: at.toFixed(2), y: 2, width: (W - at).toFixed(2), height: H - 4, fill: '#f2f2f2',
        stroke: '#ccc', 'class': 'ledger-rest'}, bar), rest);
      var rows = parts.map(function (q) { return [q.name, fmtBytes(q.bytes), q.note]; });
      rows.push(['= accounted', fmtBytes(x.accounted_bytes), 'the buckets above this process holds']);
      if (typeof x.nvml_process_bytes === 'number')
        rows.push(['NVML: this process', fmtBytes(x.nvml_process_bytes), typeof x.unaccounted_bytes === 'number' ?
          'unaccounted ' + fmtBytes(x.unaccounted_bytes) + ' (' + (x.nvml_process_bytes ? (100 * x.unaccounted_bytes / x.nvml_process_bytes).toFixed(2) : '0.00') + '%)' :
          'the context is not measured, so nothing is checked against it']);
      else if (typeof x.device_used_bytes === 'number')
        rows.push(['NVML: device used', fmtBytes(x.device_used_bytes), 'all processes: NVML cannot tell this process\u2019s share']);
      if (typeof x.free_bytes === 'number')
        rows.push(['free', fmtBytes(x.free_bytes), 'of ' + fmtBytes(total)]);
      table(box, 'ledger', ['held by', 'bytes', 'how it is known'], rows, true);
    });
    if (dev.context_unknown_why) el('p', {'class': 'note ledger-why'}, box, 'GPU ' + dev.device + ': ' + dev.context_unknown_why + '.');
    if (dev.modules_refuted)
      el('p', {'class': 'note'}, box, 'The kernel modules measured after the first iteration are left out: with them the buckets exceed NVML\u2019s figure at exit.');
  });
  legend(box, Object.keys(GT_LEDGER_COLOR).filter(function (k) { return drawn[k]; }).map(function (k) {
    return {color: GT_LEDGER_COLOR[k], label: GT_LEDGER_LABEL[k] || k};
  }));
}
