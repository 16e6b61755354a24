/* report_timeline.js - the memory-over-time panel of gputrace's HTML report
 * (report.js draws the rest, and hands this file its helpers as H). Carried
 * in the binary beside report.js and put before it in the page. */
/* Memory over time: every series, iteration bands, each live series' peak,
 * the out-of-memory failures. It opens on the span with allocation calls (a
 * program's start-up can be most of its life, and flat); the whole run is
 * one click away. Time 0 is the trace's start: the program's first CUDA call. */
function gtTimelinePanel(H, parent, tr, id) {
  'use strict';
  var el = H.el, sv = H.sv, attrs = H.attrs, tip = H.tip, fmtBytes = H.fmtBytes, fmtNs = H.fmtNs, legend = H.legend,
    plot = H.plot, SERIES_COLOR = H.seriesColor;
  var box = el('div', {'class': 'panel', id: id}, parent);
  el('h3', {}, box, 'Memory over time');
  var series = tr.series || [], its = (tr.peak && tr.peak.iterations) || [], hidden = {};
  var ooms = ((tr.oom && tr.oom.failures) || []).filter(function (f) { return typeof f.time_ns === 'number'; });
  var end = Math.max(tr.end_ns, 1), whole = {x0: 0, x1: end};
  var a0 = tr.allocations_from_ns, a1 = tr.allocations_to_ns;
  var allocs = typeof a0 === 'number' && typeof a1 === 'number' && a1 > a0 ? {x0: a0, x1: a1} : whole;
  /* the view can be given in the address, #t=FROM,TO (ns), and zooming
   * writes it there: a zoomed view can be bookmarked or shared */
  var MIN_VIEW = 10;   /* ns: no narrower view (a few ns is below the clock's resolution anyway) */
  var m = /^#t=(\d+),(\d+)$/.exec(window.location.hash);
  var view = m && +m[2] > +m[1] && +m[1] < end ? {x0: +m[1], x1: Math.min(+m[2], end)} : allocs;
  if (view.x1 - view.x0 < MIN_VIEW) view = allocs;
  function same(a, b) { return Math.round(a.x0) === Math.round(b.x0) && Math.round(a.x1) === Math.round(b.x1); }
  function remember() {
    if (window.history && window.history.replaceState)
      window.history.replaceState(null, '', same(view, allocs) ? '#' : '#t=' + Math.round(view.x0) + ',' + Math.round(view.x1));
  }
  var bar = el('div', {'class': 'viewbar'}, box);
  var buttons = [['view-allocs', 'Allocations: ' + fmtNs(allocs.x0) + ' to ' + fmtNs(allocs.x1), allocs],
    ['view-all', 'Whole run: 0 to ' + fmtNs(end), whole]].map(function (b) {
    var e = el('button', {type: 'button', 'class': b[0]}, bar, b[1]);
    e.addEventListener('click', function () { view = b[2]; remember(); draw(); });
    return [e, b[2]];
  });
  var holder = el('div', {'class': 'chartbox'}, box);
  el('p', {'class': 'hint'}, box, 'Time since the program\u2019s first CUDA call. Drag across the chart to zoom in, double-click to ' +
    'return to the allocations; click a legend key to hide its series. ' +
    (series.some(function (s) { return s.bucketed; }) ? 'Long series are drawn from per-bucket minimum and maximum; peaks are exact.' : ''));
  var keys = legend(box, series.map(function (s) { return {color: SERIES_COLOR[s.memory] || '#333', label: s.name + ', peak ' + fmtBytes(s.peak_bytes)}; })
    .concat(ooms.length ? [{color: '#c00', label: ooms.length + ' out-of-memory failure' + (ooms.length === 1 ? '' : 's')}] : []));
  /* clicking a legend key hides or shows its series (NVML's whole-device
   * bytes can dwarf what the program allocated) */
  Array.prototype.forEach.call(keys.children, function (k, i) {
    if (i >= series.length) return;
    k.classList.add('toggle');
    k.addEventListener('click', function () {
      hidden[series[i].name] = !hidden[series[i].name];
      k.classList.toggle('off', !!hidden[series[i].name]);
      draw();
    });
  });

  function draw() {
    holder.textContent = '';
    buttons.forEach(function (b) { b[0].classList.toggle('on', same(view, b[1])); });
    var shown = series.filter(function (s) { return !hidden[s.name]; }), ymax = 1;
    shown.forEach(function (s) { ymax = Math.max(ymax, s.peak_bytes); });
    var p = plot(holder, {cls: 'timeline', x0: view.x0, x1: view.x1, y0: 0, y1: ymax * 1.05, height: 300,
      xlabel: 'time since the first CUDA call', ylabel: 'memory in use'});
    attrs(p.svg, {'data-x0': Math.round(view.x0), 'data-x1': Math.round(view.x1)});
    /* a band per iteration while each can be told apart (3 px or more on
     * average); a long job's many thousands in view are left out, said below */
    var inView = 0;
    its.forEach(function (it) { if (!(it.end_ns < view.x0 || it.start_ns > view.x1)) inView++; });
    var bands = inView * 3 <= p.W;
    if (!bands)
      el('p', {'class': 'note bands-left-out'}, holder, inView + (its.length && its[0].last_index !== undefined ?
        ' runs of iterations' : ' iterations') + ' in view: too many to draw apart; zoom in ' +
        '(drag across the chart) to see them');
    its.forEach(function (it, k) {
      if (!bands || it.end_ns < view.x0 || it.start_ns > view.x1) return;
      var x0 = p.x(Math.max(it.start_ns, view.x0)), x1 = p.x(Math.min(it.end_ns, view.x1));
      var r = sv('rect', {x: x0, y: p.T, width: Math.max(x1 - x0, 0.5), height: p.H - p.T - p.B,
        'class': 'band' + (k % 2 ? ' odd' : '')}, p.body);
      tip(r, (it.last_index !== undefined ? 'iterations ' + it.index + '-' + it.last_index + ' (their highest)' :
        'iteration ' + it.index) + (it.batch_size !== null ? ', batch size ' + it.batch_size : '') + ', peak ' + fmtBytes(it.peak_bytes));
    });
    shown.forEach(function (s) {
      var pts = s.points, d = [], n = 0, prevY = null;
      for (var i = 0; i + 1 < pts.length; i += 2) {
        var t = pts[i], nextT = i + 2 < pts.length ? pts[i + 2] : end;
        if (nextT < view.x0 || t > view.x1) continue;
        var x = p.x(Math.max(t, view.x0)), y = p.y(pts[i + 1]);
        if (prevY === null) d.push('M' + x.toFixed(1) + ' ' + y.toFixed(1));
        else if (s.bucketed) d.push('L' + x.toFixed(1) + ' ' + y.toFixed(1));
        else d.push('H' + x.toFixed(1) + 'V' + y.toFixed(1));
        prevY = y;
        n++;
      }
      if (prevY !== null && !s.bucketed) d.push('H' + p.x(Math.min(end, view.x1)).toFixed(1));
      sv('path', {d: d.join('') || 'M0 0', 'class': 'series', stroke: SERIES_COLOR[s.memory] || '#333',
        'data-name': s.name, 'data-points': n}, p.body);
      if (s.memory !== 'nvml_used' && s.peak_time_ns >= view.x0 && s.peak_time_ns <= view.x1) {
        var c = sv('circle', {cx: p.x(s.peak_time_ns), cy: p.y(s.peak_bytes), r: 5, 'class': 'peak',
          fill: SERIES_COLOR[s.memory] || '#333', 'data-bytes': s.peak_bytes, 'data-name': s.name}, p.body);
        tip(c, 'peak of ' + s.name + ': ' + fmtBytes(s.peak_bytes) + ' at ' + fmtNs(s.peak_time_ns));
      }
    });
    ooms.forEach(function (f) {
      if (f.time_ns < view.x0 || f.time_ns > view.x1) return;
      var x = p.x(f.time_ns), g = sv('g', {'class': 'oom-mark', 'data-time-ns': f.time_ns}, p.svg);
      sv('line', {x1: x, x2: x, y1: p.T, y2: p.H - p.B}, g);
      sv('path', {d: 'M' + (x - 5).toFixed(1) + ' ' + (p.T - 8) + 'h10l-5 8z'}, g);
      tip(g, 'out of memory at ' + fmtNs(f.time_ns) + ': asked for ' + fmtBytes(f.requested_bytes) + ' with ' +
        fmtBytes(f.live_bytes) + ' live' + (f.ended_program ? ' (the program ended on it)' : ''));
    });
    var sel = null, start = null;
    function px(ev) {
      var r = p.svg.getBoundingClientRect();
      return (ev.clientX - r.left) / r.width * p.W;
    }
    p.svg.addEventListener('mousedown', function (ev) {
      start = px(ev);
      sel = sv('rect', {x: start, y: p.T, width: 0, height: p.H - p.T - p.B, 'class': 'zoomsel'}, p.svg);
    });
    p.svg.addEventListener('mousemove', function (ev) {
      if (sel) { var x = px(ev); attrs(sel, {x: Math.min(x, start), width: Math.abs(x - start)}); }
    });
    p.svg.addEventListener('mouseup', function (ev) {
      var x = px(ev);
      if (sel && Math.abs(x - start) > 4) {
        var a = Math.max(0, p.xinv(Math.min(x, start))), b = Math.min(end, p.xinv(Math.max(x, start)));
        if (b - a < MIN_VIEW) { a = Math.max(0, (a + b - MIN_VIEW) / 2); b = Math.min(end, a + MIN_VIEW); }
        view = {x0: a, x1: b};
        remember();
        draw();
      } else if (sel) { sel.remove(); }
      sel = null;
    });
    p.svg.addEventListener('dblclick', function () { view = allocs; remember(); draw(); });
  }
  draw();
}
