/* report.js - draws gputrace's HTML report from the JSON data block
 * (#gt-data) that `gputrace report` writes into the page: per trace an
 * overview card (program, devices, duration, events, peaks, the verdicts,
 * each linking to its section), memory over time with iteration bands, peaks
 * and out-of-memory failures (it opens on the span with allocations; drag to
 * zoom), the memory ledger (who held the memory at the peak and at exit,
 * beside NVML), peak per iteration coloured by batch size, peak vs batch size with
 * the fit and the device limit, growth, leaks and OOM tables. Charts are
 * drawn at the width of the window (again when it changes). Text from the trace only
 * ever reaches the page through textContent, never as markup. When done the
 * body gets data-rendered="ok"; any script error is written into #errors
 * (what the tests read back from headless Chromium). Two panels are drawn
 * by files of their own, report_timeline.js and report_ledger.js. */
(function () {
  'use strict';
  var SVG = 'http://www.w3.org/2000/svg';
  var PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];
  var SERIES_COLOR = {device: '#4e79a7', pool: '#f28e2b', managed: '#59a14f', host: '#b07aa1', nvml_used: '#e15759'};
  var errors = [];

  function fail(msg) {
    errors.push(msg);
    var pre = document.getElementById('errors');
    pre.hidden = false;
    pre.textContent = errors.join('\n');
    document.body.setAttribute('data-errors', String(errors.length));
  }
  window.addEventListener('error', function (e) { fail('script error: ' + e.message + ' (line ' + e.lineno + ')'); });

  function attrs(e, a) {
    for (var k in a) if (Object.prototype.hasOwnProperty.call(a, k)) e.setAttribute(k, String(a[k]));
    return e;
  }
  function el(tag, a, parent, text) {
    var e = attrs(document.createElement(tag), a || {});
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (parent) parent.appendChild(e);
    return e;
  }
  function sv(tag, a, parent, text) {
    var e = attrs(document.createElementNS(SVG, tag), a || {});
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (parent) parent.appendChild(e);
    return e;
  }
  function tip(e, text) { sv('title', {}, e, text); return e; }

  /* As analyzer/format.c's gt_fmt_bytes_d, step for step, so that the page
   * and the text reports print the same number: halves round away from zero
   * (81395712 bytes: 77.63 MiB in both), and 1023.999 KiB is 1.00 MiB. */
  function fmtBytes(b) {
    if (b === null || b === undefined) return 'unknown';
    var units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'], v = Math.abs(b), i = 0;
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    var r = i ? Math.floor(v * 100 + 0.5) / 100 : Math.floor(v + 0.5);
    if (r >= 1024 && i < units.length - 1) { v /= 1024; i++; r = Math.floor(v * 100 + 0.5) / 100; }
    return (b < 0 && r > 0 ? '-' : '') + (i ? r.toFixed(2) : String(r)) + ' ' + units[i];
  }
  function fmtNs(ns) {
    var a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
    if (a >= 1e6) return (ns / 1e6).toFixed(3) + ' ms';
    if (a >= 1e3) return (ns / 1e3).toFixed(1) + ' us';
    return Math.round(ns) + ' ns';
  }
  function ticks(lo, hi, n) {
    var span = hi - lo;
    if (!(span > 0)) return [lo];
    var step = Math.pow(10, Math.floor(Math.log(span / n) / Math.LN10)), out = [];
    [1, 2, 5, 10].some(function (m) { if (span / (step * m) <= n) { step *= m; return true; } return false; });
    /* a step below the doubles' spacing at lo never advances v (times near
     * 1e18 ns, a zoom of a few ns): at most 3n ticks, and none that repeats */
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9 && out.length < 3 * n + 3; v += step) {
      if (out.length && v <= out[out.length - 1]) break;
      out.push(v);
    }
    return out.length ? out : [lo];
  }
  function byteTicks(hi, n) {   /* multiples of a power of two, for readable byte labels */
    if (!(hi > 0)) return [0];
    var step = Math.pow(2, Math.ceil(Math.log(hi / n) / Math.LN2)), out = [];
    for (var v = 0; v <= hi; v += step) out.push(v);
    return out;
  }

  /* A plot area: scales, axes and a clip; returns helpers. */
  function plot(parent, o) {
    /* drawn at the container's width in CSS pixels, so text keeps its size on a phone and a wide screen */
    var W = Math.max(300, Math.round(parent.clientWidth || 960)), H = o.height || 260, L = 84, R = 30, T = 18, B = 38;
    var svg = sv('svg', {viewBox: '0 0 ' + W + ' ' + H, 'class': 'chart ' + o.cls, role: 'img'}, parent);
    var p = {svg: svg, W: W, H: H, L: L, R: R, T: T, B: B,
      x: function (v) { return L + (v - o.x0) / ((o.x1 - o.x0) || 1) * (W - L - R); },
      y: function (v) { return H - B - (v - o.y0) / ((o.y1 - o.y0) || 1) * (H - T - B); },
      xinv: function (px) { return o.x0 + (px - L) / (W - L - R) * (o.x1 - o.x0); }};
    var ax = sv('g', {'class': 'axis'}, svg);
    (o.ytick || byteTicks)(o.y1, 5).forEach(function (v) {
      sv('line', {x1: L, x2: W - R, y1: p.y(v), y2: p.y(v), 'class': 'grid'}, ax);
      sv('text', {x: L - 6, y: p.y(v) + 4, 'text-anchor': 'end', 'class': 'ytick'}, ax, (o.yfmt || fmtBytes)(v));
    });
    (o.xticks || ticks(o.x0, o.x1, Math.max(3, Math.floor((W - L - R) / 80)))).forEach(function (v) {
      sv('text', {x: p.x(v), y: H - B + 15, 'text-anchor': 'middle', 'class': 'xtick'}, ax, (o.xfmt || fmtNs)(v));
    });
    if (o.xlabel) sv('text', {x: L + (W - L - R) / 2, y: H - 3, 'text-anchor': 'middle', 'class': 'label xlabel'}, ax, o.xlabel);
    if (o.ylabel) sv('text', {x: -(T + (H - T - B) / 2), y: 12, transform: 'rotate(-90)', 'text-anchor': 'middle',
      'class': 'label ylabel'}, ax, o.ylabel);
    var id = 'clip' + Math.random().toString(36).slice(2);
    sv('rect', {x: L, y: T, width: W - L - R, height: H - T - B}, sv('clipPath', {id: id}, sv('defs', {}, svg)));
    p.body = sv('g', {'clip-path': 'url(#' + id + ')'}, svg);
    return p;
  }

  function legend(parent, items) {
    var d = el('div', {'class': 'legend'}, parent);
    items.forEach(function (it) {
      var s = el('span', {'class': 'key'}, d);
      el('i', {style: 'background:' + it.color}, s);
      s.appendChild(document.createTextNode(it.label));
    });
    return d;
  }

  /* what the panels in report_*.js files draw with */
  var helpers = {el: el, sv: sv, attrs: attrs, tip: tip, fmtBytes: fmtBytes, fmtNs: fmtNs, legend: legend,
    table: table, plot: plot, seriesColor: SERIES_COLOR};   /* (function declarations: hoisted) */

  function batchColors(its) {
    var sizes = [];
    its.forEach(function (it) { if (it.batch_size !== null && sizes.indexOf(it.batch_size) < 0) sizes.push(it.batch_size); });
    sizes.sort(function (a, b) { return a - b; });
    var color = {};
    sizes.forEach(function (s, k) { color[s] = PALETTE[k % PALETTE.length]; });
    return {sizes: sizes, of: function (bs) { return bs === null ? '#9a9a9a' : color[bs]; }};
  }

  /* Peak live bytes of each iteration, coloured by batch size. */
  function bars(parent, pk, id) {
    var its = pk.iterations || [];
    var box = el('div', {'class': 'panel', id: id}, parent);
    el('h3', {}, box, 'Peak per iteration (' + pk.memory + ' memory)');
    if (!its.length) { el('p', {'class': 'note'}, box, 'No iterations found: ' + (pk.iteration_detection || '')); return; }
    /* past MAX_BARS iterations (a long job's hundreds of thousands drew a
     * rect and a tooltip each: a 40 s page) a bar is a run of consecutive
     * iterations at its highest peak */
    var MAX_BARS = 1000, all = its, group = Math.ceil(all.length / MAX_BARS);
    if (group > 1) {
      its = [];
      for (var g = 0; g < all.length; g += group) {
        var top = all[g], last = all[Math.min(g + group, all.length) - 1];
        for (var q = g; q < g + group && q < all.length; q++) if (all[q].peak_bytes > top.peak_bytes) top = all[q];
        /* (an entry may be a run of iterations already: the page's data groups a long job's) */
        its.push({index: all[g].index, last_index: last.last_index !== undefined ? last.last_index : last.index,
          peak_bytes: top.peak_bytes, batch_size: top.batch_size,
          failed_allocation: all.slice(g, g + group).some(function (it) { return it.failed_allocation; })});
      }
      el('p', {'class': 'note'}, box, pk.iterations_grouped_by > 1 ? pk.iteration_count + ' iterations: each bar is up to ' +
        group * pk.iterations_grouped_by + ' consecutive ones at their highest peak' :
        all.length + ' iterations: each bar is ' + group + ' consecutive ones at their highest peak');
    } else if (pk.iterations_grouped_by > 1) {
      el('p', {'class': 'note'}, box, pk.iteration_count + ' iterations: each bar is up to ' + pk.iterations_grouped_by +
        ' consecutive ones at their highest peak');
    }
    var ymax = 1;
    its.forEach(function (it) { ymax = Math.max(ymax, it.peak_bytes); });
    /* bar k centred on k, labelled once with its iteration's index: every
     * bar while there is room, else every step-th */
    var holder = el('div', {'class': 'chartbox'}, box);
    var room = Math.max(1, Math.floor(((holder.clientWidth || 960) - 100) / 36)), step = Math.ceil(its.length / room), at = [];
    for (var k = 0; k < its.length; k += step) at.push(k);
    var p = plot(holder, {cls: 'bars', x0: -0.5, x1: its.length - 0.5, y0: 0, y1: ymax * 1.05, xticks: at,
      xfmt: function (v) { return String(its[v].index); }, xlabel: 'iteration', ylabel: 'peak in use'});
    var colors = batchColors(its), w = (p.x(1) - p.x(0));
    its.forEach(function (it, k) {
      var y = p.y(it.peak_bytes);
      var r = sv('rect', {x: p.x(k) - w * 0.4, y: y, width: Math.max(w * 0.8, 0.5), height: p.y(0) - y,
        fill: colors.of(it.batch_size), 'class': 'bar' + (it.failed_allocation ? ' failed' : ''),
        'data-bytes': it.peak_bytes, 'data-batch-size': it.batch_size === null ? '' : it.batch_size}, p.body);
      tip(r, (it.last_index !== undefined ? 'iterations ' + it.index + '-' + it.last_index : 'iteration ' + it.index) +
        ': peak ' + fmtBytes(it.peak_bytes) +
        (it.batch_size !== null ? ', batch size ' + it.batch_size : '') + (it.failed_allocation ? ' (cut short by a failed allocation)' : ''));
    });
    legend(box, colors.sizes.map(function (s) { return {color: colors.of(s), label: 'batch size ' + s}; })
      .concat(its.some(function (it) { return it.batch_size === null; }) ? [{color: colors.of(null), label: 'batch size unknown'}] : []));
    if (colors.sizes.length === 1)
      el('p', {'class': 'note'}, box, 'Every iteration has batch size ' + colors.sizes[0] +
        ': peak vs batch size needs two batch sizes or more, so it is not drawn.');
  }

  /* Peak vs batch size: every complete iteration, the least-squares fit and the device limit. */
  function scatter(parent, pk, id) {
    var pts = (pk.iterations || []).filter(function (it) { return it.batch_size !== null && !it.failed_allocation; });
    if (batchColors(pts).sizes.length < 2) return;   /* one batch size: nothing to say (the bars' note says so) */
    var box = el('div', {'class': 'panel', id: id}, parent);
    el('h3', {}, box, 'Peak vs batch size');
    var holder = el('div', {'class': 'chartbox'}, box);
    var xmax = 1, ymax = 1, limit = pk.device_total_bytes;
    pts.forEach(function (it) { xmax = Math.max(xmax, it.batch_size); ymax = Math.max(ymax, it.peak_bytes); });
    var limitOnChart = limit !== null && limit !== undefined && limit <= ymax * 3;
    if (limitOnChart) ymax = Math.max(ymax, limit);
    var p = plot(holder, {cls: 'scatter', x0: 0, x1: xmax * 1.1, y0: 0, y1: ymax * 1.08, height: 280,
      xfmt: function (v) { return String(Math.round(v)); }, xlabel: 'batch size', ylabel: 'peak in use'});
    if (limit !== null && limit !== undefined) {
      var ly = limitOnChart ? p.y(limit) : p.T + 1;
      sv('line', {x1: p.L, x2: p.W - p.R, y1: ly, y2: ly, 'class': 'limit', 'data-bytes': limit}, p.svg);
      sv('text', {x: p.L + 6, y: ly - 4, 'class': 'limit-label'}, p.svg,
        'device limit ' + fmtBytes(limit) + (limitOnChart ? '' : ' (off the chart, above)'));
    }
    if (pk.fit) {
      var f = pk.fit, x1 = xmax * 1.1;
      sv('line', {x1: p.x(0), y1: p.y(f.fixed_bytes), x2: p.x(x1), y2: p.y(f.fixed_bytes + f.per_sample_bytes * x1), 'class': 'fit'}, p.body);
    }
    var colors = batchColors(pts);
    pts.forEach(function (it) {
      tip(sv('circle', {cx: p.x(it.batch_size), cy: p.y(it.peak_bytes), r: 5, 'class': 'dot', fill: colors.of(it.batch_size),
        'data-bytes': it.peak_bytes, 'data-batch-size': it.batch_size}, p.body),
        (it.last_index !== undefined ? 'iterations ' + it.index + '-' + it.last_index + ' (their highest)' :
        'iteration ' + it.index) + ': batch size ' + it.batch_size + ', peak ' + fmtBytes(it.peak_bytes));
    });
    var t = pk.fit ? 'peak = ' + fmtBytes(pk.fit.fixed_bytes) + ' + ' + fmtBytes(pk.fit.per_sample_bytes) + ' x batch size (R\u00b2 ' +
      pk.fit.r2.toFixed(4) + ')' : pk.peaks_follow_history ? 'No fit: the peaks follow the allocator\'s history.' :
      'No fit: needs iterations with at least two batch sizes.';
    if (pk.max_batch_size === 0) t += '; largest batch size predicted to fit: none (batch size 1 needs more than is available)';
    else if (pk.max_batch_size !== null && pk.max_batch_size !== undefined) t += '; largest batch size predicted to fit: ' + pk.max_batch_size;
    else if (pk.max_batch_size_withheld) t += '; no largest batch size: ' + pk.max_batch_size_withheld + ' (' + pk.what_would_give_one + ')';
    if (pk.fit && pk.fit.reliable === false)
      t += '. The fit is poor: these peaks do not follow batch size, so neither does the prediction (a caching allocator keeps ' +
        'what earlier batches reserved; with PyTorch, trace with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync).';
    el('p', {'class': 'note fit-text'}, box, t);
  }

  /* A call site's text, one element per frame, so that a line breaks
   * between frames (inside one only when it is wider than the line); the
   * cell's text stays the call site's text. */
  function frameCell(td, text) {
    td.textContent = '';
    String(text).split(' <- ').forEach(function (f, k) {
      if (k) td.appendChild(document.createTextNode(' <- '));
      el('span', {'class': 'frame'}, td, f);
    });
  }
  /* the last column holds call sites, unless textOnly (then plain text) */
  function table(parent, cls, head, rows, textOnly) {
    var wrap = el('div', {'class': 'tablebox'}, parent);
    var tb = el('table', {'class': cls}, wrap), tr = el('tr', {}, el('thead', {}, tb)), body = el('tbody', {}, tb);
    head.forEach(function (h) { el('th', {}, tr, h); });
    rows.forEach(function (r) {
      var row = el('tr', {'class': 'row'}, body);
      r.forEach(function (c, k) {
        var last = k === r.length - 1;
        var td = el('td', {'class': last ? (textOnly ? 'text' : 'frames') : 'num'}, row, c);
        if (last && !textOnly) frameCell(td, c);
      });
    });
    return tb;
  }
  // a site as the text reports show it: the analyzer's "call_site" (short
  // names, the allocator's and the dispatcher's frames folded, sites told
  // apart); from the frames themselves for JSON written without it
  function frames(s) {
    if (typeof s.call_site === 'string') return s.call_site;
    var f = s.frames || [], skip = s.allocator_frames || 0, own = f.slice(skip);
    return (skip ? '[' + skip + ' allocator frame' + (skip === 1 ? '' : 's') + '] ' : '') +
      own.slice(0, 6).join(' <- ') + (own.length > 6 ? ' <- \u2026' : '');
  }

  /* "47 of 50 iterations", and the steps seen in later kernel windows (kernels sampled) */
  function fitted(g) {
    var later = g.later_steps_fitted || 0, its = g.iterations_fitted - later;
    return (its !== g.iterations ? its + ' of ' : '') + g.iterations + ' iterations' + (later ? ' and ' + later +
      ' steps seen in later kernel windows (placed at ' + fmtNs(g.later_steps_placed_at_ns) + ' a step)' : '');
  }

  /* what growth followed where the default did not grow (another level, one device, one thread's loop),
   * and a late rise's rate since it began: '' when none */
  function followed(g) {
    var s = [];
    if (g.default_level) s.push('the default ' + g.default_level.memory + ' level read ' + g.default_level.verdict);
    if (g.device_followed) s.push('device ' + g.device_followed.device + ' alone; the ' + g.device_followed.devices +
      ' devices together read ' + g.device_followed.devices_verdict);
    if (g.thread_loop) s.push('the allocations made on thread ' + g.thread_loop.tid + ' over its own loop; the whole process read ' +
      g.thread_loop.process_verdict);
    if (typeof g.held_rise_slope_since_bytes_per_iteration === 'number')
      s.push('it began to rise after iteration ' + g.held_rise_began_after_iteration + ': ' +
        fmtBytes(g.held_rise_slope_since_bytes_per_iteration) + ' per iteration since');
    return s.length ? ' (' + s.join('; ') + ')' : '';
  }

  function growth(parent, g, id) {
    var box = el('div', {'class': 'panel', id: id}, parent);
    el('h3', {}, box, 'Growth per iteration');
    if (!g || g.error) { el('p', {'class': 'note'}, box, g ? g.error : 'not computed'); return; }
    var v = el('p', {}, box);
    /* a cache's stable verdict is not drawn as the good one: a tensor kept inside it does not show */
    el('span', {'class': 'verdict ' + (g.verdict_of_cache ? 'of-cache' : g.verdict), 'data-verdict': g.verdict}, v, g.verdict);
    v.appendChild(document.createTextNode(' ' + fmtBytes(g.slope_bytes_per_iteration) + ' per iteration over ' +
      fitted(g) + ' (' + g.memory + ' memory; ' + g.iteration_detection + ')' + followed(g)));
    if (g.preallocated_bytes)
      el('p', {'class': 'note prealloc'}, box, preallocNote('Not told', g.preallocated_bytes, true) +
        ': what grows there is not seen.');
    if (g.verdict_of_cache)
      el('p', {'class': 'note cache-verdict'}, box, cacheNote(g.verdict_of_cache, g.verdict));
    if (g.verdict === 'growing' && typeof g.growth_steps === 'number') {
      var cache = g.sites_are_segments && g.growth_steps && g.growth_steps_at_new_highs === g.growth_steps &&
        g.steady_tail_iterations >= 3;
      el('p', {'class': 'growth-steps', 'data-steps': g.growth_steps, 'data-steady': g.steady_tail_iterations}, box,
        'How it grew: at ' + g.growth_steps + ' of ' + (g.iterations_fitted - 1) +
        (g.later_steps_fitted ? ' points (' : ' iterations (') +
        (g.growth_steps_at_new_highs === g.growth_steps ? 'each one whose peak was the highest yet' :
          g.growth_steps_at_new_highs + ' of them with the highest peak yet') + ')' +
        (g.steady_tail_iterations >= 2 ? '; the last ' + g.steady_tail_iterations + ' ended holding the same bytes' : '') +
        '.' + (cache ? ' A caching allocator reserving for the largest batch or shape yet grows so,' +
          ' and so does a leak that fills its cached segments first: only a tensor-level trace tells them apart.' : ''));
    }
    if ((g.sites || []).length)
      table(box, 'growth-sites', ['bytes / iteration', 'call site (innermost first)'],
        g.sites.map(function (s) { return [fmtBytes(s.bytes_per_iteration), frames(s)]; }));
  }

  /* the level did not grow and most of it is a caching allocator's cache: the verdict is the cache's */
  function cacheNote(c, verdict) {
    return 'Of the ' + fmtBytes(c.live_bytes) + ' live at the last fitted iteration\u2019s end, ' + fmtBytes(c.cached_bytes) +
      ' is ' + c.allocator + '\u2019s cache: ' + verdict + ' says it asked CUDA for no more, not that the program\u2019s' +
      ' tensors stopped growing; a tensor kept inside what the cache holds shows only when it needs more. Every tensor' +
      ' is seen with: ' + c.per_tensor + '.';
  }

  /* a preallocating framework's pool (JAX's default): what the trace cannot see inside it */
  function preallocNote(lead, bytes, loop) {
    return lead + ': ' + fmtBytes(bytes) + ' was allocated ' + (loop ? 'before the loop' : 'early') +
      ' and held by a preallocating framework\'s pool (JAX\'s default), which carves its arrays inside, out of the' +
      ' trace\'s sight' +
      ' (trace at tensor level: XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform)';
  }

  function leaks(parent, l, id) {
    var box = el('div', {'class': 'panel', id: id}, parent);
    el('h3', {}, box, 'Leaks: live at process end');
    if (!l || l.error) { el('p', {'class': 'note'}, box, l ? l.error : 'not computed'); return; }
    var untold = l.classified_by_iterations && l.accumulation_told === false && l.iterations === 2;   /* a first and a last */
    if (l.preallocated_bytes)
      el('p', {'class': 'note prealloc'}, box, preallocNote(l.total_bytes || untold ? 'Note' : 'Not told',
        l.preallocated_bytes, l.iterations > 0) + ': what it keeps there is not seen. Outside the pool:');
    el('p', {}, box, (untold ? 'What accumulates is not told: ' + l.iterations + ' iterations, a first and a last (it shows from 3)' :
      fmtBytes(l.total_bytes) + ' in ' + l.total_count + (l.total_count === 1 ? ' allocation' : ' allocations') + ' never freed' +
      (l.classified_by_iterations ? ', allocated during the loop, iteration after iteration (each site\u2019s live allocations, the first iteration\u2019s too)' : '')) +
      (l.held_for_run_bytes ? '; ' + fmtBytes(l.held_for_run_bytes) + ' held for the run (allocated before the loop or in its first iteration: parameters, optimizer state; ' +
        (untold ? 'not told from a leak)' : 'not a leak)') : '') +
      (l.made_once_bytes ? '; ' + fmtBytes(l.made_once_bytes) + ' made once during the loop and kept (one iteration\u2019s, none after it: not accumulating)' : '') +
      (l.at_end_bytes ? '; ' + fmtBytes(l.at_end_bytes) + ' in use when the process ended (allocated ' +
        (untold ? 'after the first iteration)' : l.iterations === 3 ? 'in the last iteration or after the loop)' :
         'in the loop\u2019s last two iterations or after it)') : '') +
      (l.cached_bytes ? '; ' + fmtBytes(l.cached_bytes) + ' more held until exit by a caching allocator or a library handle (not a leak)' : ''));
    var row = function (s) { return [fmtBytes(s.bytes), String(s.count), frames(s)]; };
    if ((l.sites || []).length)
      table(box, 'leaks', ['bytes', 'count', 'call site (innermost first)'], l.sites.map(row));
    if ((l.freed_after_loop_sites || []).length) {
      el('h4', {}, box, 'Accumulated over the loop, freed only after it');
      el('p', {'class': 'note freed-after'}, box, fmtBytes(l.freed_after_loop_bytes) + ' in ' + l.freed_after_loop_count +
        ' allocation' + (l.freed_after_loop_count === 1 ? '' : 's') + ' made iteration after iteration and freed only in' +
        ' the loop\u2019s last iteration or after it (when the process tore down): not live at exit, but memory that grew' +
        ' while the loop ran.');
      table(box, 'freed-after', ['bytes', 'count', 'call site (innermost first)'], l.freed_after_loop_sites.map(row));
    }
    if ((l.held_for_run_sites || []).length) {
      el('h4', {}, box, 'Held for the run');
      table(box, 'held', ['bytes', 'count', 'call site (innermost first)'], l.held_for_run_sites.map(row));
    }
  }

  function ooms(parent, o, id) {
    var f = (o && !o.error && o.failures) || [];
    if (o && !o.error && !f.length) return;   /* nothing to say: the overview says "none" */
    var box = el('div', {'class': 'panel', id: id}, parent);
    el('h3', {}, box, 'Out-of-memory events');
    if (!o || o.error) { el('p', {'class': 'note'}, box, o ? o.error : 'not computed'); return; }
    // what the ledger says of the failure, as gputrace oom's text does
    function why(x) {
      if (typeof x.pool_unused_bytes === 'number')
        return 'outside the pool, which held ' + fmtBytes(x.pool_unused_bytes) + ' unused';
      if (typeof x.pool_split_bytes === 'number')
        return 'in the pool, which held at least ' + fmtBytes(x.pool_split_bytes) + ' unused, not in one piece it could serve';
      if (typeof x.short_by_bytes === 'number')
        return x.short_by_bytes > 0 ? 'short by ' + fmtBytes(x.short_by_bytes) : 'fitted by the ledger';
      return '';
    }
    table(box, 'oom', ['time', 'requested', 'live then', 'device total', 'batch size', 'had to be smaller by', 'why',
                       'largest holder'],
      f.map(function (x) {
        var top = (x.sites || [])[0];
        return [fmtNs(x.time_ns), fmtBytes(x.requested_bytes), fmtBytes(x.live_bytes), fmtBytes(x.device_total_bytes),
          x.batch_size === null ? '' : String(x.batch_size), x.batch_size_reduction === null ? '' : String(x.batch_size_reduction),
          why(x), top ? fmtBytes(top.bytes) + ' at ' + frames(top) : ''];
      }));
  }

  /* The overview card: what a reader wants first, each line linking to the
   * section that shows it. Every figure is one the JSON holds (data-key /
   * data-value carry it for the tests); what is unknown says why. */
  function overview(parent, tr, ids) {
    var sum = tr.summary || {}, proc = sum.process || {}, pk = tr.peak || {}, g = tr.growth || {}, l = tr.leaks || {}, o = tr.oom || {};
    var box = el('div', {'class': 'panel overview', id: ids.overview}, parent);
    el('h3', {}, box, 'Overview');
    var dl = el('dl', {}, box);
    function item(key, label, value, text, href, cls) {
      var row = el('div', {'class': 'item ' + key + (cls ? ' ' + cls : ''), 'data-key': key,
        'data-value': value === null || value === undefined ? '' : value}, dl);
      el('dt', {}, row, label);
      var dd = el('dd', {}, row);
      if (href) el('a', {href: '#' + href}, dd, text); else dd.textContent = text;
      return row;
    }
    item('program', 'Program', proc.command_line || proc.exe || '',
      (proc.command_line || proc.exe || 'unknown') + ' (pid ' + (proc.pid === undefined ? '?' : proc.pid) +
      (proc.rank !== null && proc.rank !== undefined ? ', rank ' + proc.rank : '') + (proc.host ? ', ' + proc.host : '') + ')');
    var devs = sum.devices || [];
    item('devices', 'Devices', devs.length, devs.length ? devs.map(function (d) {
      return 'GPU ' + d.id + ': ' + (d.name || 'unknown') + (typeof d.total_bytes === 'number' ? ', ' + fmtBytes(d.total_bytes) : '');
    }).join('; ') : 'none recorded (read once the program has initialised CUDA)');
    item('duration', 'Duration', sum.duration_ns, typeof sum.duration_ns === 'number' ? fmtNs(sum.duration_ns) +
      ' from the first CUDA call' + (proc.end_reason ? ' to ' + proc.end_reason : ' (the process was killed: no end recorded)') : 'unknown');
    /* what the trace left out, as every text report's first line says */
    var ks = sum.kernel_sampling, fr = sum.flight_recorder;
    if (ks) attrs(item('kernel_sampling', 'Kernels', ks.recorded_ns, 'sampled: recorded during ' + fmtNs(ks.recorded_ns) +
      (typeof ks.every_kernel_until_ns === 'number' ? ', every one until ' + fmtNs(ks.every_kernel_until_ns) : '') +
      '; the kernel timeline and iterations found from kernels cover those spans only', null), {title: ks.how});
    if (fr) item('flight_recorder', 'Flight recorder', fr.window_ns, fr.complete_from_ns > 0 ? 'only the last ' +
      fmtNs(fr.window_ns) + ' are kept in full (from ' + fmtNs(fr.complete_from_ns) +
      '): the figures below cover that span, not the whole run' : 'the last ' + fmtNs(fr.window_ns) +
      ' are kept in full, and the run was shorter: all of it is here', ids.timeline);
    var gc = sum.graph_capture;   /* CUDA graph capture: its nodes are in no level */
    if (gc) item('graph_capture', 'CUDA graphs', gc.allocation_nodes, gc.allocation_nodes + ' allocation node' +
      (gc.allocation_nodes === 1 ? '' : 's') + ' (' + fmtBytes(gc.allocation_node_bytes) + ') captured: the graph\u2019s memory, ' +
      'taken when it runs, is in no level here' + (gc.allocations_during_capture ? '; ' + fmtBytes(gc.bytes_allocated_during_capture) +
      ' allocated while capturing (private pools: in the levels and the ledger)' : ''), ids.ledger);
    var ev = sum.events || {};
    item('events', 'Events', ev.total, (ev.total === undefined ? '?' : ev.total) + ' memory calls recorded (' + (ev.allocs || 0) + ' allocations, ' +
      (ev.frees || 0) + ' frees, ' + (ev.failed || 0) + ' failed' + (ev.other ? ', ' + ev.other + ' other' : '') + ')', null);
    var dropped = ev.dropped || 0;
    item('dropped', 'Dropped', dropped, dropped ? dropped + ' events not recorded: ' + (sum.drops || []).map(function (d) {
      return d.count + ' ' + d.reason; }).join(', ') : 'none: every call was recorded', null, dropped ? 'bad' : '');
    (sum.peaks || []).forEach(function (pe) {
      var where = pe.device === null || pe.device === undefined || pe.device < 0 ? 'host' : 'GPU ' + pe.device;
      /* a flight recorder's trace: the peak above is the window's; the whole run's from its summaries */
      var whole = typeof pe.whole_run_peak_bytes === 'number' && fr && fr.complete_from_ns > 0 ? '; in the window only: the whole run peaked at ' +
        fmtBytes(pe.whole_run_peak_bytes) : '';
      var row = item('peak', 'Peak ' + pe.memory, pe.peak_bytes, fmtBytes(pe.peak_bytes) + ' (' + where + ') at ' +
        fmtNs(pe.peak_time_ns) + whole, ids.timeline);
      attrs(row, {'data-memory': pe.memory, 'data-device': pe.device});
    });
    (sum.ledger || []).forEach(function (dev) {   /* who held the memory at the peak (the ledger) */
      var x = (dev.instants || []).filter(function (i) { return i.instant === 'peak'; })[0];
      if (!x || !(x.buckets || []).length) return;
      var top = x.buckets.slice().sort(function (a, b) { return b.bytes - a.bytes; })[0];
      attrs(item('ledger', 'Held at peak', x.accounted_bytes, 'GPU ' + dev.device + ': ' + fmtBytes(x.accounted_bytes) + ' in ' +
        x.buckets.length + (x.buckets.length === 1 ? ' bucket' : ' buckets') + ', the largest ' + top.name + ' (' + fmtBytes(top.bytes) + ')',
        ids.ledger), {'data-device': dev.device});
    });
    if (g.error) item('growth', 'Growth', 'unknown', 'unknown: ' + g.error, ids.growth);
    else if (g.preallocated_bytes) item('growth', 'Growth', g.verdict, 'unknown: a preallocating framework\'s arrays' +
      ' lie inside its pool of ' + fmtBytes(g.preallocated_bytes) + ', out of sight', ids.growth, '');
    else if (g.verdict) item('growth', 'Growth', g.verdict, g.verdict + ': ' + fmtBytes(g.slope_bytes_per_iteration) + ' per iteration over ' +
      (typeof g.iterations_fitted === 'number' ? fitted(g) : g.iterations + ' iterations') + ' (' + g.memory + ' memory)' +
      followed(g) + (g.verdict_of_cache ? '; the verdict of ' + g.verdict_of_cache.allocator + '\u2019s cache, which asked CUDA' +
        ' for no more: a tensor kept inside it does not show' : ''),
      ids.growth, g.verdict === 'growing' ? 'bad' : g.verdict === 'stable' && !g.verdict_of_cache ? 'good' : '');
    if (l.error) item('leaks', 'Leaks', '', 'unknown: ' + l.error, ids.leaks);
    else if (l.preallocated_bytes && !l.total_bytes)
      item('leaks', 'Leaks', '', 'not told: a preallocating framework\'s arrays lie inside its pool of ' +
        fmtBytes(l.preallocated_bytes) + ', out of sight', ids.leaks);
    else if (l.classified_by_iterations && l.accumulation_told === false && !l.total_bytes)
      item('leaks', 'Leaks', '', 'not told: ' + l.iterations + ' iterations; what accumulates shows from 3', ids.leaks);
    else if (typeof l.total_bytes === 'number')
      item('leaks', 'Leaks', l.total_bytes, (l.total_bytes ? fmtBytes(l.total_bytes) + ' in ' + l.total_count + ' allocation' +
        (l.total_count === 1 ? '' : 's') + (l.classified_by_iterations ? ' allocated during the loop and never freed' : ' live at exit') :
        l.freed_after_loop_bytes ? 'none live at exit' : 'none') +
        (l.freed_after_loop_bytes ? '; ' + fmtBytes(l.freed_after_loop_bytes) + ' accumulated over the loop and was freed only after it' : ''),
        ids.leaks, l.total_bytes ? 'bad' : l.freed_after_loop_bytes ? '' : 'good');
    var nf = (o.failures || []).length;
    if (o.error) item('ooms', 'Out of memory', '', 'unknown: ' + o.error, null);
    else item('ooms', 'Out of memory', nf, nf ? nf + ' failure' + (nf === 1 ? '' : 's') + (o.failures[0].ended_program ? ', the program ended on one' : '') +
      ': ' + fmtBytes(o.failures[0].requested_bytes) + ' requested at ' + fmtNs(o.failures[0].time_ns) : 'none', nf ? ids.oom : null, nf ? 'bad' : 'good');
    var nbs = (pk.by_batch_size || []).length;
    if (pk.error) item('batch', 'Largest batch', '', 'unknown: ' + pk.error, null);
    else if (pk.max_batch_size === 0)
      item('batch', 'Largest batch', 'none', 'batch size 1 needs more than is available, predicted from the peaks of ' + nbs + ' batch sizes', ids.scatter, 'bad');
    else if (pk.max_batch_size !== null && pk.max_batch_size !== undefined)
      item('batch', 'Largest batch', pk.max_batch_size, pk.max_batch_size + ', predicted from the peaks of ' + nbs + ' batch sizes' +
        (pk.fit ? ' (R\u00b2 ' + pk.fit.r2.toFixed(4) + ')' : ''), ids.scatter);
    else
      item('batch', 'Largest batch', 'withheld', 'not predicted: ' + (pk.max_batch_size_withheld ||
        (nbs < 2 ? (nbs ? 'every iteration has the same batch size' : 'no batch sizes in the trace') +
          '; the fit needs iterations with two batch sizes or more (bs=N in an NVTX range, or gputrace_iteration)' : 'no reliable fit')),
        nbs >= 2 ? ids.scatter : ids.bars);
  }


  /* Several ranks of one job (gputrace ranks' JSON): the peak of each
   * iteration, one line per rank, matched by iteration index; and each rank's
   * peak, growth and failure. */
  function ranksPanel(app, R) {
    /* traces of processes that are no ranks (no RANK set) are no job to compare */
    if (!R || !R.ranks || R.ranks.filter(function (r) { return r.rank !== null; }).length < 2) return;
    var s = el('section', {'class': 'ranks'}, app);
    el('h2', {}, s, R.ranks.length + ' ranks' + (R.world_size !== null ? ' of ' + R.world_size : '') + ' on ' + R.hosts + (R.hosts === 1 ? ' host' : ' hosts'));
    var box = el('div', {'class': 'panel'}, s);
    el('h3', {}, box, 'Peak per iteration, rank by rank');
    var name = function (r) { return r.rank !== null ? 'rank ' + r.rank : r.file; };
    if (R.max_peak_bytes)
      el('p', {}, box, 'Highest peak: ' + name(R.ranks.filter(function (r) { return r.file === R.max_peak_file; })[0] || {file: R.max_peak_file}) + ', ' +
        fmtBytes(R.max_peak_bytes) + ', ' + fmtBytes(R.peak_skew_bytes) + ' above the median of the ranks\u2019 peaks.' +
        (R.growth_outliers.length ? ' Growing unlike most ranks: rank ' + R.growth_outliers.join(', ') + '.' : ''));
    var its = R.iterations || [];
    if (its.length) {
      var ymax = 1, x0 = its[0].index, x1 = its[its.length - 1].index;
      its.forEach(function (it) { it.peak_bytes.forEach(function (v) { if (v !== null) ymax = Math.max(ymax, v); }); });
      var p = plot(box, {cls: 'ranks', x0: x0 - 0.5, x1: x1 + 0.5, y0: 0, y1: ymax * 1.05,
        xfmt: function (v) { return String(Math.round(v)); }, xlabel: 'iteration'});
      R.ranks.forEach(function (r, k) {
        var d = '', pts = [];
        its.forEach(function (it) {
          var v = it.peak_bytes[k];
          if (v === null) return;
          d += (pts.length ? 'L' : 'M') + p.x(it.index).toFixed(1) + ',' + p.y(v).toFixed(1);
          pts.push(v);
        });
        tip(sv('path', {d: d, fill: 'none', stroke: PALETTE[k % PALETTE.length], 'stroke-width': 2, 'class': 'rank-series',
          'data-name': name(r), 'data-peaks': pts.join(',')}, p.body), name(r) + ': peak ' + fmtBytes(r.peak_bytes));
      });
      legend(box, R.ranks.map(function (r, k) { return {color: PALETTE[k % PALETTE.length], label: name(r) + ', peak ' + fmtBytes(r.peak_bytes)}; }));
    } else {
      el('p', {'class': 'note'}, box, 'No iterations found in any rank.');
    }
    table(box, 'ranks', ['rank', 'host', 'pid', 'peak', 'final', 'growth', 'iterations', 'failed'], R.ranks.map(function (r) {
      return [name(r), r.host || '', String(r.pid), fmtBytes(r.peak_bytes), fmtBytes(r.final_bytes),
        r.growth_verdict + (r.slope_bytes_per_iteration !== null ? ' ' + fmtBytes(r.slope_bytes_per_iteration) + '/it' : ''),
        String(r.iterations), r.failed || ''];
    }));
  }

  /* A sweep's runs (gputrace sweep: one process per batch size, each trace
   * noting it): the peak of each run by its batch size, the runs that ran out
   * of memory (the failure the program ended on) at the top, and the proven
   * boundary when the largest that ran and the smallest that failed are
   * adjacent. Traces without a sweep's note count when all their iterations
   * carry one batch size. */
  function sweepPanel(app, traces, poolDraw) {
    var runs = [];
    traces.forEach(function (tr, n) {
      if (tr.error !== undefined || !tr.peak || tr.peak.error) return;
      var sum = tr.summary || {}, bs = sum.run_batch_size;
      var sizes = (tr.peak.by_batch_size || []).map(function (b) { return b.batch_size; });
      if ((bs === undefined || bs === null) && sizes.length === 1) bs = sizes[0];
      if (bs === undefined || bs === null) return;
      var f = ((tr.oom && !tr.oom.error && tr.oom.failures) || []).filter(function (x) { return x.ended_program; })[0];
      /* the peak as gputrace sweep counts it: under a pool its reservation at
       * its highest, and what the driver held for CUDA graphs */
      var room = tr.peak.room || {}, level = tr.peak.peak_bytes, reserved = room.pool_reserved_max_bytes;
      if (reserved !== null && reserved !== undefined && reserved > level) level = reserved;
      var avail = tr.peak.available_bytes;
      runs.push({n: n, file: tr.file, bs: bs, peak: level + (room.graph_memory_bytes || 0), oom: !!f,
        pooled: reserved !== null && reserved !== undefined, inUse: tr.peak.peak_bytes,
        headroom: avail === null || avail === undefined ? null : Math.max(0, avail - level),
        needed: f ? f.live_bytes + (f.requested_bytes || 0) : null, limit: tr.peak.device_total_bytes});
    });
    var distinct = runs.map(function (r) { return r.bs; }).filter(function (b, i, a) { return a.indexOf(b) === i; });
    if (distinct.length < 2) return;
    var s = el('section', {'class': 'sweep'}, app);
    el('h2', {}, s, 'Sweep: ' + runs.length + ' runs at ' + distinct.length + ' batch sizes');
    var box = el('div', {'class': 'panel', id: 'sweep'}, s);
    el('h3', {}, box, 'Peak by batch size, one process each');
    var xmax = 1, ymax = 1, limit = null;
    runs.forEach(function (r) {
      xmax = Math.max(xmax, r.bs);
      ymax = Math.max(ymax, r.oom ? (r.needed || 0) : r.peak || 0);
      if (r.limit) limit = limit === null ? r.limit : Math.min(limit, r.limit);
    });
    if (limit !== null) ymax = Math.max(ymax, limit);
    var p = plot(el('div', {'class': 'chartbox'}, box), {cls: 'sweep', x0: 0, x1: xmax * 1.08, y0: 0, y1: ymax * 1.08, height: 280,
      xfmt: function (v) { return String(Math.round(v)); }, xlabel: 'batch size', ylabel: 'peak'});
    if (limit !== null) {
      sv('line', {x1: p.L, x2: p.W - p.R, y1: p.y(limit), y2: p.y(limit), 'class': 'limit', 'data-bytes': limit}, p.svg);
      sv('text', {x: p.L + 6, y: p.y(limit) - 4, 'class': 'limit-label'}, p.svg, 'device limit ' + fmtBytes(limit));
    }
    runs.forEach(function (r) {
      if (r.oom) {
        var y = p.y(Math.min(r.needed || ymax, ymax)), x = p.x(r.bs);
        tip(sv('path', {d: 'M' + (x - 5) + ',' + (y - 5) + 'L' + (x + 5) + ',' + (y + 5) + 'M' + (x - 5) + ',' + (y + 5) + 'L' +
          (x + 5) + ',' + (y - 5), 'class': 'sweep-oom', stroke: '#c0392b', 'stroke-width': 2, 'data-batch-size': r.bs}, p.body),
          r.file + ': batch size ' + r.bs + ', out of memory' + (r.needed ? ' (needed at least ' + fmtBytes(r.needed) + ')' : ''));
      } else {
        tip(sv('circle', {cx: p.x(r.bs), cy: p.y(r.peak || 0), r: 5, 'class': 'dot sweep-fit', fill: '#2e86c1',
          'data-batch-size': r.bs, 'data-bytes': r.peak}, p.body), r.file + ': batch size ' + r.bs + ', peak ' + fmtBytes(r.peak) +
          (r.pooled ? ' (pool reserved)' : ''));
      }
    });
    var ran = runs.filter(function (r) { return !r.oom; }).map(function (r) { return r.bs; });
    var failed = runs.filter(function (r) { return r.oom; }).map(function (r) { return r.bs; });
    var hi = ran.length ? Math.max.apply(null, ran) : null, lo = failed.length ? Math.min.apply(null, failed) : null;
    var t = hi === null ? 'No run fitted.' : 'Largest batch size that ran: ' + hi + (lo === null ? '; none ran out of memory.' :
      '; smallest that ran out of memory: ' + lo + (lo === hi + 1 ? ' (adjacent: the boundary is proven).' : '.'));
    el('p', {'class': 'note sweep-text'}, box, t);
    /* what the largest that fit every time it ran left of the device at its
     * peak, its tightest run (NVML's readings): the sweep's answer, unless it
     * took a margin below it */
    var steady = ran.filter(function (b) { return failed.indexOf(b) < 0; });
    var top = steady.length ? Math.max.apply(null, steady) : null;
    var left = runs.filter(function (r) { return !r.oom && r.bs === top && r.headroom !== null; })
      .map(function (r) { return r.headroom; });
    if (left.length) {
      var least = Math.min.apply(null, left);
      var para = el('p', {'class': 'note sweep-headroom', 'data-bytes': least}, box, 'At its peak the tightest run of ' +
        top + ', the largest that fit every time it ran, left ' + fmtBytes(least) +
        ' of the device unused (NVML\u2019s total less what the trace and NVML show held).');
      /* under a pool, a fresh run's reservation varies by chance (sweep.h):
       * say when the largest left less than that, as gputrace sweep's margin does */
      var use = Math.max.apply(null, runs.filter(function (r) { return !r.oom && r.bs === top && r.pooled; })
        .map(function (r) { return r.inUse || 0; }).concat([0]));
      if (use > 0 && poolDraw > 0 && least < poolDraw * use) {
        para.setAttribute('data-draw-bytes', Math.round(poolDraw * use));
        para.appendChild(document.createTextNode(' Under a stream-ordered pool a fresh run\u2019s reservation varies by chance, by up to ' +
          (100 * poolDraw).toFixed(1) + '% of its bytes in use as measured (' + fmtBytes(poolDraw * use) + ' here, more than was left):' +
          ' a fresh run of ' + top + ' may fail.'));
      }
    }
    table(box, 'sweep-runs', ['batch size', 'peak', 'result', 'trace'], runs.slice().sort(function (a, b) { return a.bs - b.bs; })
      .map(function (r) {
        return [String(r.bs), r.oom ? (r.needed ? '\u2265 ' + fmtBytes(r.needed) : '') : fmtBytes(r.peak), r.oom ? 'out of memory' : 'fits', r.file];
      }));
  }

  function section(app, tr, n) {
    var s = el('section', {'class': 'trace', id: 'trace-' + n}, app);
    if (tr.error !== undefined) {   /* a trace gputrace could not read: what happened, in its place */
      el('h2', {}, s, tr.file);
      var box = el('div', {'class': 'panel error', 'data-exit-code': tr.exit_code}, s);
      el('h3', {}, box, 'Not reported');
      el('p', {'class': 'note'}, box, tr.error + ' (exit status ' + tr.exit_code + ')');
      return;
    }
    var sum = tr.summary || {}, proc = sum.process || {}, ids = {};
    ['overview', 'timeline', 'ledger', 'bars', 'scatter', 'growth', 'leaks', 'oom'].forEach(function (k) { ids[k] = 'trace-' + n + '-' + k; });
    el('h2', {}, s, tr.file + (sum.rank !== null && sum.rank !== undefined ? ' \u00b7 rank ' + sum.rank : '') +
      (sum.pid !== null && sum.pid !== undefined ? ' \u00b7 pid ' + sum.pid : ''));
    if (proc.command_line) el('p', {'class': 'cmd'}, s, proc.command_line);
    var hasPeak = tr.peak && !tr.peak.error;
    var parts = [['overview', function () { overview(s, tr, ids); }],
      ['timeline', function () { gtTimelinePanel(helpers, s, tr, ids.timeline); }],
      ['ledger', function () { gtLedgerPanel(helpers, s, sum.ledger, ids.ledger); }],
      ['bars', function () { if (hasPeak) bars(s, tr.peak, ids.bars); }],
      ['scatter', function () { if (hasPeak) scatter(s, tr.peak, ids.scatter); }],
      ['growth', function () { growth(s, tr.growth, ids.growth); }], ['leaks', function () { leaks(s, tr.leaks, ids.leaks); }],
      ['oom', function () { ooms(s, tr.oom, ids.oom); }]];
    parts.forEach(function (part) {
      try { part[1](); } catch (e) { fail(part[0] + ': ' + (e && e.stack ? e.stack : e)); }
    });
  }

  try {
    var data = JSON.parse(document.getElementById('gt-data').textContent);
    var files = data.traces.map(function (t) { return t.file; });
    document.title = 'gputrace report: ' + files.join(', ');
    el('p', {'class': 'gen'}, document.querySelector('header'), 'Generated by ' + data.generator + ' from ' + files.join(', '));
    var app = document.getElementById('app');
    var render = function () {
      app.textContent = '';
      try { ranksPanel(app, data.ranks); } catch (e) { fail('ranks: ' + (e && e.stack ? e.stack : e)); }
      try { sweepPanel(app, data.traces, data.pool_draw); } catch (e) { fail('sweep: ' + (e && e.stack ? e.stack : e)); }
      data.traces.forEach(function (tr, n) { section(app, tr, n); });
    };
    render();
    /* charts are drawn at the window's width: again when it changes */
    var width = app.clientWidth, pending = null;
    window.addEventListener('resize', function () {
      clearTimeout(pending);
      pending = setTimeout(function () {
        if (app.clientWidth === width) return;
        width = app.clientWidth;
        try { render(); } catch (e) { fail('render: ' + (e && e.stack ? e.stack : e)); }
      }, 150);
    });
  } catch (e) {
    fail('render: ' + (e && e.stack ? e.stack : e));
  }
  document.body.setAttribute('data-rendered', 'ok');
})();
