"""gputrace report: the HTML page renders in headless Chromium without a
script error, and its charts and tables hold what the workloads planted:
one timeline point per change of each memory level, one band and one bar per
iteration with the planted peaks and batch sizes, one scatter dot per
iteration with the fit and the device limit, the growth verdict, leak and
OOM rows; long series are bucketed but keep their exact peak; trace strings
stay text; nothing is fetched from the network. One Chromium launch per
report, reading the DOM back with --dump-dom."""
import html
import html.parser
import json
import os
import re
import shutil
import sqlite3
import subprocess

import analyzer_traces as T
import gtlib
import viz_traces as V

BUCKETS = 1500   # GT_REPORT_BUCKETS in analyzer/report.h


def chromium():
    for name in ('chromium', 'chromium-browser', 'google-chrome'):
        path = shutil.which(name)
        if path:
            return path
    raise AssertionError('headless Chromium is needed to test the HTML report: install it with scripts/deps.sh '
                         '(Debian package "chromium")')


class Element:
    def __init__(self, tag, attrs, section, parent=None):
        self.tag, self.attrs, self.section, self.text, self.parent = tag, dict(attrs), section, '', parent

    def has_class(self, c):
        return c in (self.attrs.get('class') or '').split()

    def inside(self, other):
        e = self.parent
        while e is not None and e is not other:
            e = e.parent
        return e is other


class Dom(html.parser.HTMLParser):
    """Flat list of elements with their attributes, all their text, and the
    index of the report section (one per trace file) they sit in."""
    VOID = {'meta', 'br', 'img', 'input', 'link', 'hr'}

    def __init__(self, text):
        super().__init__()
        self.elements, self.stack, self.section = [], [], -1
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        e = Element(tag, attrs, self.section, self.stack[-1] if self.stack else None)
        if tag == 'section' and e.has_class('trace'):
            self.section += 1
            e.section = self.section
        self.elements.append(e)
        if tag not in self.VOID:
            self.stack.append(e)

    def handle_endtag(self, tag):
        for k in range(len(self.stack) - 1, -1, -1):
            if self.stack[k].tag == tag:
                del self.stack[k:]
                break

    def handle_data(self, data):
        for e in self.stack:
            e.text += data

    def find(self, tag, cls=None, section=None):
        return [e for e in self.elements if e.tag == tag and (cls is None or e.has_class(cls))
                and (section is None or e.section == section)]


class ReportTest(T.AnalyzerTest):

    def report(self, *dbs, fragment='', args=()):
        """Writes the report of dbs (with options args), renders it once (at
        URL fragment, if given); returns (Dom, page data, html text)."""
        out = os.path.join(self.dir, 'report.html')
        self.ok('report', *dbs, *args, '-o', out)
        with open(out, encoding='utf-8') as f:
            page = f.read()
        p = subprocess.run([chromium(), '--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
                            '--user-data-dir=' + os.path.join(self.dir, 'chromium-profile'), '--dump-dom',
                            'file://' + out + fragment], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        dom = Dom(p.stdout)
        body = dom.find('body')[0]
        errors = dom.find('pre')[0]
        self.assertEqual(errors.text.strip(), '', 'script errors in the page')
        self.assertEqual(body.attrs.get('data-rendered'), 'ok', 'the page did not finish rendering')
        data = json.loads(re.search(r'<script type="application/json" id="gt-data">(.*?)</script>', page, re.S).group(1))
        return dom, data, page

    def series_paths(self, dom, section):
        return {e.attrs['data-name']: int(e.attrs['data-points']) for e in dom.find('path', 'series', section)}


class Render(ReportTest):

    def test_charts_and_tables_hold_the_planted_workloads(self):
        db, p = V.timeline(self.dir)
        leak = T.leak_retained(self.dir)
        eq = T.memory_equation(self.dir, outside=700 * T.MiB)
        # the whole run of every trace (the page opens on the span with allocations)
        dom, data, _ = self.report(db, leak, eq, fragment='#t=0,%d' % 10**12)
        self.assertEqual(len(dom.find('section', 'trace')), 3)

        # timeline.db: one point per change (plus the start at 0), NVML samples as planted
        levels = p.levels()
        self.assertEqual(self.series_paths(dom, 0), {'device (GPU 0)': len(levels['device']) + 1,
                                                     'pool (GPU 0)': len(levels['pool']) + 1,
                                                     'NVML used (GPU 0)': V.N_SAMPLES})
        self.assertEqual(len(dom.find('rect', 'band', 0)), len(V.BATCHES))
        peaks = {e.attrs['data-name']: int(e.attrs['data-bytes']) for e in dom.find('circle', 'peak', 0)}
        self.assertEqual(peaks, {'device (GPU 0)': V.WEIGHTS, 'pool (GPU 0)': max(b for _, b in levels['pool'])})
        bars = dom.find('rect', 'bar', 0)
        self.assertEqual([int(b.attrs['data-batch-size']) for b in bars], V.BATCHES)
        self.assertEqual([int(b.attrs['data-bytes']) for b in bars],
                         [V.POOL_STATE + bs * V.PER_SAMPLE + V.WORKSPACE for bs in V.BATCHES])
        self.assertEqual(len({b.attrs['fill'] for b in bars}), len(set(V.BATCHES)))   # coloured by batch size
        self.assertEqual(len(dom.find('circle', 'dot', 0)), len(V.BATCHES))
        self.assertEqual(len(dom.find('line', 'fit', 0)), 1)
        self.assertEqual([int(e.attrs['data-bytes']) for e in dom.find('line', 'limit', 0)], [80 * T.GiB])
        self.assertEqual(dom.find('span', 'verdict', 0)[0].attrs['data-verdict'], 'stable')
        self.assertEqual(len(dom.find('table', 'oom', 0)), 1)
        self.assertEqual(len([r for r in dom.find('tr', 'row', 0) if '200.00 GiB' in r.text]), 1)   # the failed request
        # a frame name full of markup stays text: no element made from it (shortened
        # as a C++ name: "<...>" reads as template arguments; --full-names shows it whole)
        self.assertIn('evil"fn&amp;\u00e9', ''.join(e.text for e in dom.find('td', 'frames', 0)))
        self.assertEqual(dom.find('img'), [])

        # leak_retained.db: growing, the planting function first among growing sites and leaks
        self.assertEqual(dom.find('span', 'verdict', 1)[0].attrs['data-verdict'], 'growing')
        self.assertIn(T.LEAK_PLANTING_FUNCTION, dom.find('table', 'growth-sites', 1)[0].text)
        # a leak grows at every iteration and never holds: how it grew, with no word of a cache
        steps = dom.find('p', 'growth-steps', 1)[0]
        self.assertEqual((int(steps.attrs['data-steps']), int(steps.attrs['data-steady'])), (T.LEAK_ITERATIONS - 2, 1))
        self.assertNotIn('caching allocator', steps.text)
        self.assertNotIn('ended holding the same bytes', steps.text)   # only the last one: nothing held
        leak_rows = [e for e in dom.find('tr', 'row', 1) if T.LEAK_PLANTING_FUNCTION in e.text and 'MiB' in e.text]
        self.assertTrue(leak_rows)
        self.assertIn('5.00 MiB', ' '.join(e.text for e in dom.find('tr', 'row', 1)))
        self.assertEqual(len(dom.find('rect', 'bar', 1)), T.LEAK_ITERATIONS)

        # memory_equation.db: the fit's largest batch, one dot per complete iteration
        self.assertEqual(len(dom.find('circle', 'dot', 2)), len(T.EQ_BATCHES))
        fit_text = dom.find('p', 'fit-text', 2)[0].text
        self.assertIn('largest batch size predicted to fit: %d' % T.eq_max_batch(outside=700 * T.MiB), fit_text)
        self.assertEqual([int(e.attrs['data-bytes']) for e in dom.find('line', 'limit', 2)], [T.EQ_DEVICE_TOTAL])

    def test_a_burst_early_in_a_long_run_is_bucketed_over_the_calls_not_the_run(self):
        # 6,000 changes in the first 3 ms of a 100 s run: bucketed over the
        # whole run they fell into 3 buckets, and the chart, which opens on
        # the calls' span, drew one spike and then nothing
        t = T.Trace(os.path.join(self.dir, 'burst.db'), tick_ns=250)
        for k in range(3000):
            t.free(t.alloc((1 + k % 5) * T.MiB, ['step', 'main']))
        t.t = 100 * 10**9   # the run goes on, with no call, for 100 s
        db = t.close()
        dom, data, _ = self.report(db)
        dev = [s for s in data['traces'][0]['series'] if s['name'].startswith('device')][0]
        self.assertTrue(dev['bucketed'])
        times = dev['points'][0::2]
        # the drawn points spread over the burst, many of them, not three
        self.assertGreater(len(set(times)), BUCKETS // 2)
        self.assertLessEqual(max(times), 3000 * 2 * 250 + 1000)

    def test_long_series_are_bucketed_with_exact_peaks(self):
        # many iterations: far more changes than the page draws; one batch of 77 plants the peak
        batches = [8 + (k % 5) for k in range(3000)]
        batches[1777] = 77
        db, p = V.timeline(self.dir, batches=batches)
        dom, data, _ = self.report(db)
        pool = [s for s in data['traces'][0]['series'] if s['name'] == 'pool (GPU 0)'][0]
        levels = p.levels()['pool']
        self.assertGreater(len(levels), 4000)
        self.assertTrue(pool['bucketed'])
        self.assertEqual(pool['changes'], len(levels))
        planted_peak = max(b for _, b in levels)
        self.assertEqual(planted_peak, V.POOL_STATE + 77 * V.PER_SAMPLE + V.WORKSPACE)
        self.assertEqual((pool['peak_bytes'], pool['peak_time_ns']), (planted_peak, [t for t, b in levels if b == planted_peak][0]))
        self.assertIn(planted_peak, pool['points'][1::2])   # the drawn envelope reaches the peak
        drawn = self.series_paths(dom, 0)['pool (GPU 0)']
        self.assertLessEqual(drawn, 2 * BUCKETS + 1)   # min and max per bucket, and the start at 0
        self.assertEqual(drawn, len(pool['points']) // 2)
        peaks = {e.attrs['data-name']: int(e.attrs['data-bytes']) for e in dom.find('circle', 'peak', 0)}
        self.assertEqual(peaks['pool (GPU 0)'], planted_peak)
        # 3,000 iterations: 1,000 bars of 3 consecutive ones each, at their highest peak (the
        # page's data holds those groups: past 2,000 iterations it lists no more one by one)
        bars = dom.find('rect', 'bar', 0)
        self.assertEqual(len(bars), 1000)
        its = self.json('peak', db)['iterations']
        self.assertEqual(len(its), 3000)
        self.assertEqual([int(b.attrs['data-bytes']) for b in bars],
                         [max(it['peak_bytes'] for it in its[k:k + 3]) for k in range(0, 3000, 3)])
        page = data['traces'][0]['peak']
        self.assertEqual((page['iteration_count'], page['iterations_grouped_by'], len(page['iterations'])), (3000, 3, 1000))
        self.assertEqual([(g['index'], g['last_index']) for g in page['iterations'][:2]],
                         [(its[0]['index'], its[2]['index']), (its[3]['index'], its[5]['index'])])
        self.assertNotIn('live_bytes_at_iteration_end', data['traces'][0]['growth'])   # drawn nowhere on the page

    def test_a_trace_that_fails_gets_an_error_panel_and_the_others_are_reported(self):
        db = T.leak_retained(self.dir)
        broken = os.path.join(self.dir, 'broken.db')
        with open(broken, 'wb') as f:
            f.write(b'not a database' * 100)
        out = os.path.join(self.dir, 'report.html')
        p = self.gputrace('report', db, broken, '-o', out)
        self.assertEqual(p.returncode, 4, p.stderr)   # the first failure's status, as summary gives
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn(broken, p.stderr)
        with open(out, encoding='utf-8') as f:
            page = f.read()
        data = json.loads(re.search(r'id="gt-data">(.*?)</script>', page, re.S).group(1))
        self.assertEqual([t['file'] for t in data['traces']], ['leak_retained.db', 'broken.db'])
        self.assertEqual(data['traces'][1]['exit_code'], 4)
        rendered = subprocess.run([chromium(), '--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
                                   '--no-first-run', '--user-data-dir=' + os.path.join(self.dir, 'chromium-profile'),
                                   '--dump-dom', 'file://' + out], capture_output=True, text=True, timeout=120)
        dom = Dom(rendered.stdout)
        self.assertEqual(dom.find('body')[0].attrs.get('data-rendered'), 'ok')
        self.assertEqual(dom.find('pre')[0].text.strip(), '')
        self.assertEqual(len(dom.find('section', 'trace')), 2)
        self.assertEqual(dom.find('span', 'verdict', 0)[0].attrs['data-verdict'], 'growing')   # the good one, in full
        panel = dom.find('div', 'error', 1)
        self.assertEqual(len(panel), 1)
        self.assertEqual(panel[0].attrs['data-exit-code'], '4')
        self.assertIn(data['traces'][1]['error'], panel[0].text)
        self.assertIn('broken.db', dom.find('h2', None, 1)[0].text)

    def test_frame_full_of_markup_stays_text_with_full_names(self):
        db, _ = V.timeline(self.dir)
        dom, _, _ = self.report(db, args=('--full-names',))
        self.assertIn(V.EVIL_FUNCTION, ''.join(e.text for e in dom.find('td', 'frames', 0)))
        self.assertEqual(dom.find('img'), [])

    def test_call_sites_read_as_in_the_text_reports(self):
        import test_analyzer_reports as R
        t = T.Trace(os.path.join(self.dir, 'torch.db'), module='/opt/torch/lib/libtorch_cuda.so')
        for k, caller in enumerate(R.TORCH_CALLERS):   # tensors kept: pool memory is never cached
            t.alloc((k + 1) * T.MiB, R.TORCH_DISPATCH + R.TORCH_CONV + [caller] + R.TORCH_OUTER, api='cudaMallocAsync')
        db = t.close()
        text = [s['call_site'] for s in self.json('leaks', db)['sites']]
        self.assertEqual(len(set(text)), 3)
        self.assertTrue(all(c.startswith('[5 dispatcher frames] <- at::native::run_conv_plan (libtorch_cuda.so) <- '
                                         '[4 common frames] <- at::native::cudnn_convolution') for c in text), text)
        dom, _, _ = self.report(db)
        rows = [e.text for e in dom.find('td', 'frames', 0)]
        self.assertEqual(rows[:3], text)

    def test_view_in_the_address_zooms_the_timeline(self):
        db, p = V.timeline(self.dir)
        lo, hi = p.iterations[2][0], p.iterations[3][1]
        dom, data, _ = self.report(db, fragment='#t=%d,%d' % (lo, hi))
        end = data['traces'][0]['end_ns']
        for memory in ('device', 'pool'):
            pts = [(0, 0)] + p.levels()[memory]
            # a point is drawn when the step it starts reaches into the view
            nexts = [t for t, _ in pts[1:]] + [end]
            want = sum(1 for (t, _), nt in zip(pts, nexts) if nt >= lo and t <= hi)
            self.assertEqual(self.series_paths(dom, 0)['%s (GPU 0)' % memory], want, memory)
        self.assertEqual(len(dom.find('rect', 'band', 0)), 2)   # iterations 2 and 3 only
        self.assertEqual(len(dom.find('rect', 'bar', 0)), len(V.BATCHES))   # the other charts are not zoomed


    def test_a_view_below_the_clocks_resolution_or_past_the_end_still_renders(self):
        # the time axis' ticks never advanced where a step is below the
        # doubles' spacing (times near 1e18 ns, a view a few ns wide): the
        # page froze, then failed (a helper's probe)
        t = T.Trace(os.path.join(self.dir, 'far.db'))
        a = t.alloc(T.MiB, ['f', 'main'])
        b = t.alloc(2 * T.MiB, ['g', 'main'])
        t.free(a)
        t.free(b)
        db = t.close()
        con = sqlite3.connect(db)
        con.execute('UPDATE events SET t_ns = ? + id * 64', (10 ** 18,))
        con.execute('UPDATE processes SET end_ns = ?', (10 ** 18 + 1000,))
        con.commit()
        con.close()
        self.report(db)
        db, p = V.timeline(self.dir)
        self.report(db, fragment='#t=100000000000000000,100000000000000016')
        self.report(db, fragment='#t=1000,1003')


    def test_many_iterations_are_drawn_in_bounded_bars_and_bands(self):
        # a long job's iterations drew a rect and a tooltip each (200,000: a
        # 40 s page): past 1,000 a bar stands for consecutive iterations at
        # their highest peak, and bands too many to tell apart are left out
        t = T.Trace(os.path.join(self.dir, 'long.db'))
        for k in range(3000):
            t.push('step %d' % k)
            t.free(t.alloc((k % 7 + 1) * T.MiB, ['step', 'main']))
            t.pop()
        dom, data, _ = self.report(t.close())
        bars = dom.find('rect', 'bar')
        self.assertEqual(len(bars), 1000)
        self.assertEqual(max(int(b.attrs['data-bytes']) for b in bars), 7 * T.MiB)
        self.assertEqual(dom.find('rect', 'band'), [])
        self.assertTrue(any('too many to draw apart' in e.text for e in dom.find('p')))


class Layout(ReportTest):
    """The overview card, the timeline's opening view, the OOM marks, the bar
    labels, hidden charts and call sites broken between frames (issue 16)."""

    def late_start(self, batches=(8, 16, 32, 64), import_ns=5 * 10**9, after_ns=10**9):
        """A trace whose first allocation comes import_ns after its start (a
        PyTorch program's imports) and whose end comes after_ns after its last
        event: one iteration per batch size, each allocating and freeing."""
        t = T.Trace(os.path.join(self.dir, 'late.db'), command_line='python train.py')
        t.t = import_ns
        keep = t.alloc(64 * T.MiB, ['init_weights', 'main'])
        for bs in batches:
            t.push('step bs=%d' % bs)
            a = t.alloc(bs * T.MiB, ['forward', 'train_step', 'main'])
            t.free(a)
            t.pop()
        t.free(keep)
        t.t += after_ns
        return t.close()

    def item(self, dom, section, key):
        """The overview's items of key in section."""
        card = [e for e in dom.find('div', 'overview', section)]
        self.assertEqual(len(card), 1, 'one overview card per trace')
        return [e for e in dom.find('div', 'item', section) if e.attrs.get('data-key') == key]

    def test_overview_card_holds_the_traces_figures_and_links_to_their_sections(self):
        db, _ = V.timeline(self.dir)
        leak = T.leak_retained(self.dir)
        dom, data, _ = self.report(db, leak)
        for n, tr in enumerate(data['traces']):
            summ = tr['summary']
            self.assertEqual(int(self.item(dom, n, 'duration')[0].attrs['data-value']), summ['duration_ns'])
            self.assertEqual(int(self.item(dom, n, 'events')[0].attrs['data-value']), summ['events']['total'])
            self.assertEqual(int(self.item(dom, n, 'dropped')[0].attrs['data-value']), 0)
            self.assertEqual(int(self.item(dom, n, 'devices')[0].attrs['data-value']), 1)
            self.assertIn('Fake GPU, 80.00 GiB', self.item(dom, n, 'devices')[0].text)
            self.assertEqual(sorted((e.attrs['data-memory'], int(e.attrs['data-value'])) for e in self.item(dom, n, 'peak')),
                             sorted((p['memory'], p['peak_bytes']) for p in summ['peaks']))
            self.assertEqual(int(self.item(dom, n, 'leaks')[0].attrs['data-value']), tr['leaks']['total_bytes'])
            # every link leads to a section of the page
            ids = {e.attrs.get('id') for e in dom.elements}
            for a in [e for e in dom.find('a', None, n) if e.attrs.get('href', '').startswith('#')]:
                self.assertIn(a.attrs['href'][1:], ids)
        # the planted verdicts
        self.assertEqual(self.item(dom, 0, 'growth')[0].attrs['data-value'], 'stable')
        self.assertEqual(self.item(dom, 1, 'growth')[0].attrs['data-value'], 'growing')
        self.assertEqual(int(self.item(dom, 0, 'ooms')[0].attrs['data-value']), 1)   # the 200 GiB request
        self.assertIn('200.00 GiB', self.item(dom, 0, 'ooms')[0].text)
        self.assertEqual(int(self.item(dom, 1, 'ooms')[0].attrs['data-value']), 0)
        self.assertEqual(int(self.item(dom, 0, 'batch')[0].attrs['data-value']), data['traces'][0]['peak']['max_batch_size'])
        self.assertEqual(self.item(dom, 1, 'batch')[0].attrs['data-value'], 'withheld')   # no batch sizes
        self.assertIn('no batch sizes in the trace', self.item(dom, 1, 'batch')[0].text)
        self.assertEqual(int(self.item(dom, 1, 'leaks')[0].attrs['data-value']), 5 * T.MiB)

    def test_a_run_of_two_iterations_reads_leaks_not_told_in_overview_and_panel(self):
        # a run that died in its second step: 0 B of leaks is no answer
        t = T.Trace(os.path.join(self.dir, 'died.db'))
        t.alloc(4 * T.MiB, ['init_model', 'main'], api='cudaMallocAsync')
        for step in range(2):
            t.push('step %d' % step)
            t.alloc(8 * T.MiB, ['forward', 'main'], api='cudaMallocAsync')
            t.pop()
        dom, data, _ = self.report(t.close())
        self.assertFalse(data['traces'][0]['leaks']['accumulation_told'])
        self.assertIn('not told: 2 iterations', self.item(dom, 0, 'leaks')[0].text)
        panel = [e for e in dom.find('div', 'panel', 0) if e.text.startswith('Leaks: live at process end')]
        self.assertTrue(panel)
        self.assertIn('What accumulates is not told: 2 iterations', panel[0].text)
        self.assertNotIn('0 B in 0 allocations', panel[0].text)

    def test_a_preallocating_frameworks_growth_and_leaks_read_not_told(self):
        # JAX under preallocation: its steps found from their kernels, its arrays inside one
        # allocation of a large share of the device: neither "stable" nor "none" is an answer
        dom, data, _ = self.report(T.xla_compile_staging(self.dir, kernel_steps=20))
        self.assertEqual(data['traces'][0]['growth']['preallocated_bytes'], 100 * T.GiB)
        growth = self.item(dom, 0, 'growth')[0]
        self.assertEqual(growth.attrs['data-value'], 'unknown')
        self.assertIn("unknown: a preallocating framework's arrays lie inside its pool of 100.00 GiB", growth.text)
        leaks = self.item(dom, 0, 'leaks')[0]
        self.assertIn("not told: a preallocating framework's arrays lie inside its pool of 100.00 GiB",
                      leaks.text)
        self.assertNotIn('none', leaks.text)
        notes = [e.text for e in dom.find('p', 'prealloc', 0)]
        self.assertEqual(len(notes), 2, notes)   # the growth panel's and the leaks panel's
        self.assertTrue(all('XLA_PYTHON_CLIENT_PREALLOCATE=false' in n for n in notes), notes)

    def test_a_caches_verdict_and_what_was_freed_only_after_the_loop_are_said(self):
        # session 48 (CuPy and JAX on an H200): a stable verdict that is a caching allocator's, and arrays a
        # loop kept that the framework freed only at teardown; neither reads "good" on the page
        import test_framework_caches as F
        cupy = F.pool_loop(T.Trace(os.path.join(self.dir, 'cupy.db')), 20)
        dom, data, _ = self.report(cupy)
        growth = self.item(dom, 0, 'growth')[0]
        self.assertEqual(growth.attrs['data-value'], 'stable')
        self.assertIn("the verdict of CuPy's memory pool\u2019s cache", growth.text)
        self.assertFalse(growth.has_class('good'))
        badge = [e for e in dom.find('span', 'verdict', 0) if e.attrs.get('data-verdict') == 'stable']
        self.assertEqual(len(badge), 1)
        self.assertFalse(badge[0].has_class('stable'))   # drawn green otherwise (a review)
        note = dom.find('p', 'cache-verdict', 0)
        self.assertEqual(len(note), 1)
        self.assertIn('cupy.cuda.set_allocator(cupy.cuda.MemoryAsyncPool().malloc)', note[0].text)
        jax = F.FreedOnlyAfterTheLoop('test_what_the_loop_kept_until_it_ended_is_told')
        jax.dir = self.dir
        dom, data, _ = self.report(jax.job('kept'))
        leaks = self.item(dom, 0, 'leaks')[0]
        self.assertEqual(int(leaks.attrs['data-value']), 0)
        self.assertIn('none live at exit; 40.00 MiB accumulated over the loop and was freed only after it', leaks.text)
        self.assertFalse(leaks.has_class('good'))
        self.assertEqual(len(dom.find('table', 'freed-after', 0)), 1)

    def test_a_sweeps_traces_draw_peak_by_batch_size_and_the_proven_boundary(self):
        # gputrace sweep's runs: one process per batch size, each noting GPUTRACE_BATCH_SIZE (the
        # shim's "sweep" note); batch size 4 ran out of memory and ended there
        dbs = []
        for bs in (1, 2, 3, 4):
            t = T.Trace(os.path.join(self.dir, 'bs%d.db' % bs), pid=100 + bs, command_line='python train.py --bs %d' % bs)
            keep = t.alloc(64 * T.MiB, ['init_weights', 'main'])
            act = t.alloc(bs * 100 * T.MiB, ['forward', 'train_step', 'main'], result=2 if bs == 4 else 0)
            if bs < 4:
                t.free(act)
                t.free(keep)
            db = t.close()
            with T.sqlite3.connect(db) as con:
                con.execute("INSERT INTO notes (t_ns, component, message) VALUES (0, 'sweep', ?)",
                            ('batch size %d (GPUTRACE_BATCH_SIZE)' % bs,))
            dbs.append(db)
        self.assertEqual(self.json('summary', dbs[1])['run_batch_size'], 2)
        dom, _, _ = self.report(*dbs)
        self.assertEqual(len(dom.find('section', 'sweep')), 1)
        dots = dom.find('circle', 'sweep-fit')
        self.assertEqual(sorted(int(d.attrs['data-batch-size']) for d in dots), [1, 2, 3])
        self.assertEqual(sorted(int(d.attrs['data-bytes']) for d in dots), [(64 + 100 * bs) * T.MiB for bs in (1, 2, 3)])
        self.assertEqual([int(e.attrs['data-batch-size']) for e in dom.find('path', 'sweep-oom')], [4])
        self.assertEqual(dom.find('p', 'sweep-text')[0].text, 'Largest batch size that ran: 3; smallest that ran out of '
                                                              'memory: 4 (adjacent: the boundary is proven).')
        rows = [[td.text for td in dom.elements if td.tag == 'td' and td.inside(r)] for r in dom.find('tr', 'row')
                if r.inside(dom.find('table', 'sweep-runs')[0])]
        self.assertEqual([r[:1] + r[2:3] for r in rows], [['1', 'fits'], ['2', 'fits'], ['3', 'fits'], ['4', 'out of memory']])
        # traces of one process are no sweep
        dom, _, _ = self.report(dbs[0])
        self.assertEqual(dom.find('section', 'sweep'), [])

    def test_a_pool_sweeps_report_draws_the_peaks_the_sweep_counted_and_the_largest_s_headroom(self):
        # a real sweep of the stand-in under a pool (100 MiB of slack beyond use,
        # a 128 MiB workspace beside it, a 40 MiB context that NVML shows): the
        # report's dots are the pool's reservations the sweep fitted, not the
        # bytes in use, and the largest that ran, 86, left 4 MiB
        from gtlib import GPUTRACE, WITH_NVML, base_env, prog, run
        d = os.path.join(self.dir, 'sweep')
        p = run([GPUTRACE, 'sweep', '--json', '--dir', d, '--', prog('sweep_train'), '--batch-size', '{bs}', '--async',
                 '--workspace', str(128 * T.MiB), '--per-sample', str(8 * T.MiB)], preload=False,
                env=base_env(FAKE_CUDA_DEVICE_BYTES=1024 * T.MiB, FAKE_CUDA_CONTEXT_BYTES=40 * T.MiB,
                             FAKE_CUDA_POOL_SLACK_BYTES=100 * T.MiB, LD_LIBRARY_PATH=WITH_NVML), cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        # (the sweep answers 81, leaving the pool's draw room below 86: test_sweep)
        self.assertEqual((doc['margin']['batch_size'], doc['margin']['room_for']), (86, 'pool_draw'))
        dom, _, _ = self.report(*sorted(r['trace'] for r in doc['runs']))
        dots = sorted((int(e.attrs['data-batch-size']), int(e.attrs['data-bytes'])) for e in dom.find('circle', 'sweep-fit'))
        self.assertEqual(dots, sorted((r['batch_size'], r['peak_bytes']) for r in doc['runs'] if not r['oom']))
        self.assertEqual(dots[0], (1, (164 + 8) * T.MiB))
        left = dom.find('p', 'sweep-headroom')
        # 86 left 856 - (164 + 8 x 86) = 4 MiB; the sweep's own headroom is its answer's, 81: 44 MiB
        self.assertEqual(int(left[0].attrs['data-bytes']), 4 * T.MiB)
        self.assertEqual((doc['headroom']['batch_size'], doc['headroom']['bytes']), (81, 44 * T.MiB))
        self.assertIn('the tightest run of 86, the largest that fit every time it ran, left 4.00 MiB of the device', left[0].text)
        # 4 MiB is less than a fresh run's pool may draw, 5.1% of 86's 752 MiB in use: said, as the sweep's margin
        self.assertEqual(int(left[0].attrs['data-draw-bytes']), round(0.051 * 752 * T.MiB))
        self.assertIn('by up to 5.1% of its bytes in use as measured (38.35 MiB here, more than was left): a fresh run of 86 '
                      'may fail', left[0].text)

    def test_ledger_draws_the_drivers_own_memory_apart_from_other_processes(self):
        db = T.ledger_job(self.dir, driver_reserved=624 * T.MiB)
        dom, data, _ = self.report(db)
        bar = [b for b in dom.find('svg', 'ledger-bar', 0) if b.attrs['data-instant'] == 'exit'][0]
        drawn = {e.attrs['data-name']: int(e.attrs['data-bytes']) for e in dom.find('rect', 'ledger-bucket', 0)
                 if e.inside(bar)}
        self.assertEqual((drawn['other processes'], drawn['driver and firmware']), (3 * T.GiB, 624 * T.MiB))
        rest = [e for e in dom.find('rect', 'ledger-rest', 0) if e.inside(bar)]
        free = [r for r in dom.find('tr', 'row', 0) if r.text.startswith('free')]
        self.assertTrue(free and '73.21 GiB' in free[0].text, [r.text for r in free])   # 624 MiB less than without it
        self.assertTrue(rest)

    def test_ledger_draws_who_held_the_memory_at_peak_and_exit_beside_nvml(self):
        db = T.ledger_job(self.dir)
        dom, data, _ = self.report(db)
        led = data['traces'][0]['summary']['ledger'][0]
        panel = dom.find('div', 'ledger-panel', 0)
        self.assertEqual(len(panel), 1)
        bars = dom.find('svg', 'ledger-bar', 0)
        self.assertEqual([b.attrs['data-instant'] for b in bars], ['peak', 'exit'])   # the peak first
        for bar in bars:
            x = [i for i in led['instants'] if i['instant'] == bar.attrs['data-instant']][0]
            drawn = {e.attrs['data-name']: int(e.attrs['data-bytes']) for e in dom.find('rect', 'ledger-bucket', 0)
                     if e.inside(bar)}
            planted = {'framework allocator': 2 * T.GiB, 'cuBLAS': 128 * T.MiB, "program's direct allocations": 64 * T.MiB,
                       'stream-ordered pool': 512 * T.MiB, 'CUDA context and driver': T.LEDGER_CONTEXT}
            if x['instant'] == 'exit':   # NVML sampled here: the unaccounted MiB and the other processes' 3 GiB
                planted.update({'unaccounted': 1 * T.MiB, 'other processes': 3 * T.GiB})
            self.assertEqual(drawn, planted, x['instant'])
        rows = [r.text for r in dom.find('tr', 'row', 0) if r.inside(panel[0])]
        self.assertTrue(any('stream-ordered pool' in r and '300.00 MiB in use' in r for r in rows), rows)
        self.assertTrue(any('NVML: this process' in r and 'unaccounted 1.00 MiB (0.03%)' in r for r in rows), rows)
        self.assertTrue(any(r.startswith('free') and '73.82 GiB' in r and 'of 80.00 GiB' in r for r in rows), rows)
        self.assertEqual(dom.find('p', 'ledger-why', 0), [])   # the context was measured
        # the legend names the kinds drawn, in words (it listed every internal key, drawn or not: a helper's probe)
        keys = [k.text.strip() for k in dom.find('span', 'key', 0) if k.inside(panel[0])]
        self.assertEqual(keys, ['framework allocator', 'program\u2019s own calls', 'libraries', 'stream-ordered pool',
                                'CUDA context and driver', 'unaccounted', 'other processes'])
        held = self.item(dom, 0, 'ledger')
        self.assertEqual([int(e.attrs['data-value']) for e in held],
                         [[i for i in led['instants'] if i['instant'] == 'peak'][0]['accounted_bytes']])
        self.assertIn('the largest framework allocator (2.00 GiB)', held[0].text)
        # without NVML's figure for the process the page says why the context is not known
        os.rename(db, os.path.join(self.dir, 'measured.db'))
        dom, data, _ = self.report(T.ledger_job(self.dir, process_known=False))
        why = dom.find('p', 'ledger-why', 0)
        self.assertEqual(len(why), 1)
        self.assertIn("NVML cannot tell this process's bytes", why[0].text)
        self.assertEqual(data['traces'][0]['summary']['ledger'][0]['context_unknown_why'], why[0].text[len('GPU 0: '):-1])

    def test_growth_over_later_kernel_windows_says_how_it_was_fitted(self):
        # kernels sampled, a cache creeping up after the first span: growing, over the
        # first span's iterations and the steps later windows show, told so
        dom, data, _ = self.report(T.kernels_sampled_run(self.dir))
        g = data['traces'][0]['growth']
        self.assertEqual(dom.find('span', 'verdict', 0)[0].attrs['data-verdict'], 'growing')
        self.assertGreater(g['later_steps_fitted'], 0)
        said = ' '.join(e.text for e in dom.find('p', None, 0))
        later, its = g['later_steps_fitted'], g['iterations_fitted'] - g['later_steps_fitted']
        self.assertIn('over %d of 50 iterations and %d steps seen in later kernel windows (placed at 100.000 ms a step)'
                      % (its, later), said)
        self.assertNotIn('%d of 50' % g['iterations_fitted'], said)   # the points are not iterations
        self.assertIn('of %d points' % (g['iterations_fitted'] - 1), said)

    def test_growth_says_what_it_followed_where_the_whole_did_not_grow(self):
        # device 1 keeps 1 MiB a step while device 0 gives back 1 MiB of staging a step: the devices together
        # read stable, device 1 alone grows; the page says which it is of, as the text report does
        t = T.Trace(os.path.join(self.dir, 'two.db'))
        t.alloc(64 * T.MiB, ['init', 'main'], device=0)
        staging = [t.alloc(T.MiB, ['staging_pool', 'main'], device=0) for _ in range(30)]
        for s in range(30):
            t.push('train_step')
            t.alloc(T.MiB, ['keep1', 'train_step', 'main'], device=1)
            t.free(staging.pop())
            t.pop()
        db = t.close()
        with T.sqlite3.connect(db) as con:
            con.execute("INSERT INTO devices(id, name, uuid, total_bytes, cc_major, cc_minor) "
                        "VALUES (1, 'Fake GPU', 'GPU-fake-1', ?, 9, 0)", (80 * T.GiB,))
        dom, data, _ = self.report(db)
        self.assertEqual(data['traces'][0]['growth']['device_followed']['device'], 1)
        said = ' '.join(e.text for e in dom.find('p', None, 0))
        self.assertIn('(device 1 alone; the 2 devices together read stable)', said)

    def test_overview_says_when_kernels_were_sampled(self):
        db = self.late_start()
        with T.sqlite3.connect(db) as con:   # the shim's notes of a run sampled 1 s in 2 after 1 s in full
            for t, m in ((0, 'sampled: every kernel for the first 1 s of GPU work (a pause counts 1 s), then during '
                             '1 s of every 2 s; recording'),
                         (10**9, 'paused'), (2 * 10**9, 'recording'), (3 * 10**9, 'paused')):
                con.execute("INSERT INTO notes (t_ns, component, message) VALUES (?, 'kernels', ?)", (t, m))
        dom, data, _ = self.report(db)
        ks = data['traces'][0]['summary']['kernel_sampling']
        row = self.item(dom, 0, 'kernel_sampling')
        self.assertEqual(len(row), 1)
        self.assertEqual(int(row[0].attrs['data-value']), ks['recorded_ns'])
        self.assertEqual(ks['recorded_ns'], 2 * 10**9)
        self.assertIn('every one until 1.000 s', row[0].text)
        self.assertEqual(self.item(dom, 0, 'flight_recorder'), [])   # a whole-run trace says nothing of one

    def test_overview_says_when_only_a_flight_recorders_window_is_kept(self):
        db = self.late_start()
        with T.sqlite3.connect(db) as con:
            con.execute('INSERT INTO flight_recorder (window_ns, interval_ns, complete_from_ns) VALUES (?, ?, ?)',
                        (2 * 10**9, 5 * 10**8, 4 * 10**9))
        dom, data, _ = self.report(db)
        row = self.item(dom, 0, 'flight_recorder')
        self.assertEqual(len(row), 1)
        self.assertEqual(int(row[0].attrs['data-value']), data['traces'][0]['summary']['flight_recorder']['window_ns'])
        self.assertIn('only the last 2.000 s are kept in full (from 4.000 s)', row[0].text)

    def test_overview_says_a_run_shorter_than_its_window_is_whole(self):
        db = self.late_start()
        with T.sqlite3.connect(db) as con:
            con.execute('INSERT INTO flight_recorder (window_ns, interval_ns, complete_from_ns) VALUES (?, ?, ?)',
                        (60 * 10**9, 15 * 10**9, 0))
        dom, data, _ = self.report(db)
        row = self.item(dom, 0, 'flight_recorder')
        self.assertEqual(len(row), 1)
        self.assertIn('the run was shorter: all of it is here', row[0].text)
        self.assertNotIn('not the whole run', row[0].text)

    def test_a_flight_recorders_peak_row_gives_the_whole_runs_peak(self):
        # the page said only the window's peak (3 MiB) of a run that peaked at 1 GiB before it
        db = os.path.join(self.dir, 'win.db')
        p = gtlib.run([gtlib.prog('window_loop'), '2500'], env=gtlib.base_env(GPUTRACE_WINDOW_S=1, GPUTRACE_OUTPUT=db))
        self.assertEqual(p.returncode, 0, p.stderr)
        peaks = self.json('summary', db)['peaks']
        whole = [pe for pe in peaks if pe['memory'] == 'device'][0]
        self.assertGreater(whole['whole_run_peak_bytes'], whole['peak_bytes'])
        dom, data, _ = self.report(db)
        row = [r for r in self.item(dom, 0, 'peak') if r.attrs.get('data-memory') == 'device']
        self.assertEqual(len(row), 1)
        self.assertIn('in the window only: the whole run peaked at 1.00 GiB', row[0].text)
        self.assertGreaterEqual(whole['whole_run_peak_bytes'], 1 << 30)   # window_loop's early 1 GiB spike

    def test_timeline_opens_on_the_span_with_allocations(self):
        db = self.late_start()
        first, last = T.gtlib.query(db, 'SELECT min(t_ns), max(t_ns) FROM events')[0]
        self.assertGreaterEqual(first, 5 * 10**9)
        dom, data, _ = self.report(db)
        svg = dom.find('svg', 'timeline', 0)[0]
        self.assertEqual((int(svg.attrs['data-x0']), int(svg.attrs['data-x1'])), (first, last))
        self.assertLess(last, data['traces'][0]['end_ns'] - 10**8)
        # the whole run is one click away, and the axes say what they show
        self.assertEqual(len(dom.find('button', 'view-all', 0)), 1)
        self.assertEqual([e.text for e in dom.find('text', 'xlabel', 0)][0], 'time since the first CUDA call')
        self.assertEqual([e.text for e in dom.find('text', 'ylabel', 0)][0], 'memory in use')

    def test_out_of_memory_failures_are_marked_on_the_timeline(self):
        db, _ = V.timeline(self.dir)
        dom, data, _ = self.report(db)
        failures = data['traces'][0]['oom']['failures']
        self.assertEqual(len(failures), 1)
        marks = dom.find('g', 'oom-mark', 0)
        self.assertEqual([int(m.attrs['data-time-ns']) for m in marks], [f['time_ns'] for f in failures])

    def test_out_of_memory_rows_say_what_the_ledger_says_of_each_failure(self):
        # a pool's own request failed while it held enough unused (the
        # stand-in's split pool, tests/test_oom_ledger.py's PoolSplit)
        db = os.path.join(self.dir, 'split.db')
        env = dict(os.environ, GPUTRACE_OUTPUT=db, GPUTRACE_QUIET='1', FAKE_CUDA_DEVICE_BYTES=str(1 << 30),
                   GPUTRACE_CUPTI='0', FAKE_CUDA_POOL_PIECE=str(1 << 20),
                   LD_LIBRARY_PATH=gtlib.WITH_NVML, LD_PRELOAD=gtlib.SHIM)
        subprocess.run([gtlib.prog('sweep_train'), '--async', '--batch-size', '8', '--steps', '100'], env=env,
                       capture_output=True, timeout=60)
        f = self.json('oom', db)['failures'][0]
        self.assertIsNotNone(f['pool_split_bytes'])
        dom, data, _ = self.report(db)
        rows = [r for r in dom.find('tr', 'row', 0) if r.inside(dom.find('table', 'oom', 0)[0])]
        self.assertEqual(len(rows), 1)
        self.assertIn('in the pool, which held at least %.2f MiB unused' % (f['pool_split_bytes'] / (1 << 20)), rows[0].text)

    def test_peak_chart_labels_each_bar_once(self):
        dom, _, _ = self.report(self.late_start())
        self.assertEqual(len(dom.find('rect', 'bar', 0)), 4)
        svg = dom.find('svg', 'bars', 0)
        self.assertEqual(len(svg), 1)
        self.assertEqual([e.text for e in dom.find('text', 'xtick', 0) if e.inside(svg[0])], ['0', '1', '2', '3'])

    def test_peak_vs_batch_size_is_hidden_with_a_single_batch_size(self):
        dom, _, _ = self.report(self.late_start(batches=(8, 8, 8, 8)))
        self.assertEqual(dom.find('svg', 'scatter', 0), [])
        self.assertTrue(any('Every iteration has batch size 8' in e.text for e in dom.find('p', 'note', 0)))
        dom, _, _ = self.report(self.late_start(batches=(8, 16, 8, 16)))
        self.assertEqual(len(dom.find('svg', 'scatter', 0)), 1)

    def test_call_sites_break_between_frames(self):
        leak = T.leak_retained(self.dir)
        dom, data, _ = self.report(leak)
        cells = dom.find('td', 'frames', 0)
        self.assertTrue(cells)
        for td in cells:
            frames = [e.text for e in dom.find('span', 'frame', 0) if e.inside(td)]
            self.assertEqual(frames, td.text.split(' <- '))
            self.assertGreater(len(frames), 1)


class Width(ReportTest):
    """The page at a phone's width and on a wide screen: nothing sticks out of
    the window (wide tables scroll inside their box), and the charts take the
    window's width. The report is shown in an iframe of that width (a desktop
    window cannot be as narrow as a phone) and measured from the outer page."""

    def measure(self, db, width):
        out = os.path.join(self.dir, 'report.html')
        self.ok('report', db, '-o', out)
        wrapper = os.path.join(self.dir, 'at-%d.html' % width)
        with open(wrapper, 'w') as f:
            f.write('<!DOCTYPE html><body style="margin:0"><iframe id="f" src="report.html" style="width:%dpx;height:900px;border:0">'
                    '</iframe><pre id="out"></pre><script>\n'
                    'document.getElementById("f").addEventListener("load", function () {\n'
                    '  var d = document.getElementById("f").contentDocument, wide = [];\n'
                    '  d.querySelectorAll("body *").forEach(function (e) {\n'
                    '    if (e.getBoundingClientRect().right > %d.5 && !e.closest(".tablebox")) wide.push(e.tagName); });\n'
                    '  var svgs = [].map.call(d.querySelectorAll("svg.chart"), function (e) { return e.getBoundingClientRect().width; });\n'
                    '  document.getElementById("out").textContent = JSON.stringify({rendered: d.body.getAttribute("data-rendered"),\n'
                    '    scroll: d.documentElement.scrollWidth, client: d.documentElement.clientWidth, wide: wide, svgs: svgs}); });\n'
                    '</script>' % (width, width))
        p = subprocess.run([chromium(), '--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
                            '--allow-file-access-from-files', '--virtual-time-budget=5000',
                            '--user-data-dir=' + os.path.join(self.dir, 'chromium-profile'), '--window-size=%d,900' % width,
                            '--dump-dom', 'file://' + wrapper], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        m = re.search(r'<pre id="out">(.*?)</pre>', p.stdout, re.S)
        self.assertTrue(m and m.group(1), 'the page was not measured: ' + p.stdout[-500:])
        got = json.loads(html.unescape(m.group(1)))
        self.assertEqual(got['rendered'], 'ok')
        return got

    def test_page_fits_a_phones_width(self):
        got = self.measure(V.timeline(self.dir)[0], 390)
        self.assertEqual(got['wide'], [], 'elements wider than a 390 px window')
        self.assertLessEqual(got['scroll'], got['client'])

    def test_charts_use_a_wide_windows_width(self):
        got = self.measure(V.timeline(self.dir)[0], 1400)
        self.assertEqual(got['wide'], [])
        self.assertTrue(got['svgs'])
        self.assertGreater(min(got['svgs']), got['client'] - 100, got)


class Page(T.AnalyzerTest):

    def test_page_is_self_contained_and_forbids_network(self):
        db, _ = V.timeline(self.dir)
        out = os.path.join(self.dir, 'r.html')
        self.ok('report', db, '-o', out)
        with open(out, encoding='utf-8') as f:
            page = f.read()
        self.assertRegex(page, r'<meta http-equiv="Content-Security-Policy" content="default-src \'none\';')
        self.assertNotRegex(page, r'<(script|img|link|iframe)[^>]+(src|href)=')
        self.assertNotIn('http://', page.replace('http://www.w3.org/2000/svg', ''))
        self.assertNotIn('https://', page)
        # the data block cannot be ended early by a trace string: no raw '<' inside it
        block = re.search(r'id="gt-data">(.*?)</script>', page, re.S).group(1)
        self.assertNotIn('<', block)
        self.assertIn('\\u003c/script\\u003e', block)

    def test_no_trace_read_leaves_no_page(self):
        out = os.path.join(self.dir, 'r.html')
        p = self.gputrace('report', os.path.join(self.dir, 'nope.db'), os.path.join(self.dir, 'gone.db'), '-o', out)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 2, p.stderr)   # one line per file, as the reports
        self.assertEqual(os.listdir(self.dir), [])

    def test_trace_without_iterations_still_reports(self):
        db = T.no_iterations(self.dir)
        out = os.path.join(self.dir, 'r.html')
        self.ok('report', db, '-o', out)
        with open(out, encoding='utf-8') as f:
            data = json.loads(re.search(r'id="gt-data">(.*?)</script>', f.read(), re.S).group(1))
        tr = data['traces'][0]
        self.assertIn('error', tr['growth'])   # growth needs iterations: said in the page, not fatal
        self.assertEqual(tr['peak']['iterations'], [])
        self.assertEqual([s['peak_bytes'] for s in tr['series']], [5 * T.MiB])   # 2 MiB + 3 MiB live together

    def test_a_long_leaking_run_s_page_stays_bounded_and_lists_top_sites(self):
        # 600,000 new highs made a 105 MB page that drew none of them; --top was ignored (a helper's probe)
        t = T.Trace(os.path.join(self.dir, 'long.db'))
        for i in range(5000):
            t.iteration(i, None)
            t.free(t.alloc(4096, ['forward', 'main']))
            t.alloc(512, ['keep_%d' % (i % 40), 'main'])
        db = t.close()
        out = os.path.join(self.dir, 'r.html')
        for args, sites in (((), 10), (('--top', '3'), 3)):
            self.ok('report', *args, db, '-o', out)
            with open(out, encoding='utf-8') as f:
                data = json.loads(re.search(r'id="gt-data">(.*?)</script>', f.read(), re.S).group(1))
            pk = data['traces'][0]['peak']
            self.assertEqual(pk['new_high_count'], 5000)
            highs = [h['index'] for h in pk['new_highs']]
            self.assertEqual(highs, list(range(1000)) + list(range(4000, 5000)))
            self.assertEqual(len(data['traces'][0]['leaks']['sites']), sites, args)
            self.assertEqual(len(data['traces'][0]['growth']['sites']), sites, args)
        # the JSON of the command itself lists them all
        d = self.json('peak', db)
        self.assertEqual(len(d['new_highs']), 5000)
        self.assertEqual(len(self.json('leaks', db)['sites']), 40)

    def test_memory_option_picks_the_reported_level(self):
        db, _ = V.timeline(self.dir)
        out = os.path.join(self.dir, 'r.html')
        for memory in ('device', 'pool'):
            self.ok('report', '--memory', memory, db, '-o', out)
            with open(out, encoding='utf-8') as f:
                data = json.loads(re.search(r'id="gt-data">(.*?)</script>', f.read(), re.S).group(1))
            self.assertEqual(data['traces'][0]['peak']['memory'], memory)
            self.assertEqual(data['traces'][0]['peak']['peak_bytes'],
                             V.WEIGHTS if memory == 'device' else V.POOL_STATE + max(V.BATCHES) * V.PER_SAMPLE + V.WORKSPACE)


def run_on_terminal(args, cwd=None):
    """Runs gputrace ARGS with stdout on a pseudo-terminal; returns (exit
    status, what the terminal showed, stderr)."""
    import pty
    import threading
    master, slave = pty.openpty()
    p = subprocess.Popen([T.gtlib.GPUTRACE] + list(args), stdout=slave, stderr=subprocess.PIPE, cwd=cwd)
    os.close(slave)
    shown = []

    def read():   # drained as it comes: a full terminal buffer would block the writer
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown.append(chunk)
    reader = threading.Thread(target=read)
    reader.start()
    err = p.stderr.read().decode()
    rc = p.wait(timeout=120)
    reader.join(timeout=10)
    os.close(master)
    return rc, b''.join(shown).decode(errors='replace').replace('\r\n', '\n'), err


class OutputOnATerminal(T.AnalyzerTest):
    """report and export never pour HTML or JSON into a terminal: without -o
    they write a file beside the first trace and say its name; a pipe or a
    file as stdout gets the output as before."""

    def test_report_writes_a_file_beside_the_trace_and_names_it(self):
        db, _ = V.timeline(self.dir)
        rc, shown, err = run_on_terminal(['report', db])
        page = os.path.join(self.dir, 'timeline-report.html')
        self.assertEqual((rc, shown, err), (0, 'gputrace: wrote %s\n' % page, ''))
        with open(page, encoding='utf-8') as f:
            self.assertIn('<title>gputrace report</title>', f.read())
        rc, shown, _ = run_on_terminal(['report', db])   # its own file is replaced
        self.assertEqual((rc, shown), (0, 'gputrace: wrote %s\n' % page))

    def test_export_writes_trace_json_beside_the_trace(self):
        db, _ = V.timeline(self.dir)
        rc, shown, err = run_on_terminal(['export', db])
        out = os.path.join(self.dir, 'timeline.json')
        self.assertEqual((rc, shown, err), (0, 'gputrace: wrote %s\n' % out, ''))
        with open(out) as f:
            self.assertIn('traceEvents', json.load(f))

    def test_export_beside_a_trace_left_out_still_says_the_file_it_wrote(self):
        db, _ = V.timeline(self.dir)
        empty = T.Trace(os.path.join(self.dir, 'empty.db')).close()
        rc, shown, err = run_on_terminal(['export', db, empty])
        out = os.path.join(self.dir, 'timeline.json')
        self.assertEqual(rc, 7, err)
        self.assertIn('gputrace: wrote %s\n' % out, shown)
        with open(out) as f:
            self.assertEqual([m['file'] for m in json.load(f)['otherData']['skipped']], [empty])

    def test_a_file_gputrace_did_not_write_is_never_replaced(self):
        db, _ = V.timeline(self.dir)
        for cmd, name in (('report', 'timeline-report.html'), ('export', 'timeline.json')):
            theirs = os.path.join(self.dir, name)
            with open(theirs, 'w') as f:
                f.write('<!DOCTYPE html>\n<title>my notes</title>\n')
            rc, shown, err = run_on_terminal([cmd, db])
            self.assertEqual((rc, shown), (10, ''))
            self.assertEqual(err, 'gputrace: %s exists and was not written by gputrace; name the output with -o FILE '
                                  '(-o - writes to the terminal)\n' % theirs)
            with open(theirs) as f:
                self.assertEqual(f.read(), '<!DOCTYPE html>\n<title>my notes</title>\n')

    def test_dash_o_dash_and_a_pipe_still_get_the_output(self):
        db, _ = V.timeline(self.dir)
        rc, shown, _ = run_on_terminal(['report', db, '-o', '-'])
        self.assertEqual(rc, 0)
        self.assertTrue(shown.startswith('<!DOCTYPE html>'))
        p = self.ok('report', db)
        self.assertTrue(p.stdout.startswith('<!DOCTYPE html>'))
        self.assertEqual(sorted(os.listdir(self.dir)), ['timeline.db'])
