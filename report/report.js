/* ciprof's interactive report: a flame graph of the merged base/head stack tree with click to
 * zoom, search (highlight and matched share), tooltips, a base/head/diff toggle, a sandwich
 * view (a function's callers above it, its callees below) and sortable tables. Everything it
 * shows comes from the JSON block #ciprof-data and reaches the page as text (textContent),
 * never as markup: names are attacker-controlled. No framework, no network. */
(function () {
	'use strict';

	var data = JSON.parse(document.getElementById('ciprof-data').textContent);
	var FRAME_H = 18;
	var MIN_PX = 0.5; /* narrower frames are not drawn */

	/* The tree: one object per node, node 0 the root ("all"). */
	var nodes = data.nodes.map(function (n, i) {
		return {
			id: i,
			parent: n[0],
			name: i ? data.names[n[1]] : 'all',
			module: data.names[n[2]],
			head: n[3],
			base: n[4],
			flag: n[5],
			kids: []
		};
	});
	nodes.forEach(function (n) {
		if (n.id) nodes[n.parent].kids.push(n);
	});
	nodes.forEach(function (n) {
		n.kids.sort(function (a, b) {
			return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
		});
	});

	var state = { mode: 'diff', zoom: nodes[0], search: '', sandwich: null };

	function $(id) {
		return document.getElementById(id);
	}
	function el(tag, cls, text) {
		var e = document.createElement(tag);
		if (cls) e.className = cls;
		if (text !== undefined) e.textContent = text;
		return e;
	}
	function weight(n) {
		return state.mode === 'base' ? n.base / data.base_runs : n.head;
	}
	function seconds(s) {
		return s < 10 ? s.toFixed(3) + ' s' : s < 100 ? s.toFixed(2) + ' s' : s.toFixed(1) + ' s';
	}
	function pct(x) {
		return (100 * x).toFixed(1) + ' %';
	}
	/* head seconds / base seconds per run - 1: the change the seconds shown agree with */
	function change(n) {
		var b = n.base * data.base_period / data.base_runs, h = n.head * data.head_period;
		if (b > 0) return h / b - 1;
		return h > 0 ? Infinity : 0;
	}
	function changeText(n) {
		var c = change(n);
		if (c === Infinity) return 'new';
		if (!(n.head > 0)) return 'gone';
		return (c >= 0 ? '+' : '') + (100 * c).toFixed(1) + ' %';
	}
	function describe(n) {
		var lines = [n.name + (n.module ? ' [' + n.module + ']' : '')];
		lines.push('head: ' + seconds(n.head * data.head_period) + ', ' +
			pct(data.head_samples > 0 ? n.head / data.head_samples : 0) + ' of samples');
		lines.push('base: ' + seconds(n.base * data.base_period / data.base_runs) +
			' per run, ' + pct(data.base_samples > 0 ? n.base / data.base_samples : 0));
		lines.push('change: ' + changeText(n));
		if (n.flag) lines.push(n.flag > 0 ? 'flagged: slower' : 'flagged: faster');
		return lines.join('\n');
	}
	function matches(n) {
		return state.search !== '' && n.name.toLowerCase().indexOf(state.search) >= 0;
	}

	/* A stable warm colour per name for the base and head views. */
	function nameColour(name) {
		var h = 0;
		for (var i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) % 997;
		return 'hsl(' + (20 + h % 35) + ', 75%, ' + (68 + h % 12) + '%)';
	}

	/* ---- drawing: one absolutely placed div per frame ---- */

	var tip = el('div', 'tip');
	tip.id = 'tip';
	document.body.appendChild(tip);

	function frame(box, n, x, w, depth, cls) {
		var f = el('div', 'frame' + (cls ? ' ' + cls : ''));
		f.style.left = x + 'px';
		f.style.width = Math.max(w - 1, 0.5) + 'px';
		f.style.top = depth * FRAME_H + 'px';
		if (state.mode === 'diff') {
			if (n.flag > 0) f.classList.add('slower');
			else if (n.flag < 0) f.classList.add('faster');
		} else {
			f.style.background = nameColour(n.name);
		}
		if (matches(n)) f.classList.add('match');
		if (w >= 30) f.appendChild(el('span', 'label', n.name));
		f.addEventListener('mousemove', function (ev) {
			tip.textContent = describe(n);
			tip.style.display = 'block';
			/* kept inside the window: left of the pointer near the right edge */
			var right = ev.pageX + 12 + tip.offsetWidth > window.scrollX + document.documentElement.clientWidth;
			tip.style.left = (right ? ev.pageX - 12 - tip.offsetWidth : ev.pageX + 12) + 'px';
			tip.style.top = ev.pageY + 12 + 'px';
			$('details').textContent = describe(n).replace(/\n/g, ' · ');
		});
		f.addEventListener('mouseleave', function () {
			tip.style.display = 'none';
		});
		f.node = n;
		box.appendChild(f);
		return f;
	}

	/* Lays out n's subtree at depth, top-down; returns the deepest level drawn. */
	function layout(box, n, x, w, depth, scale, onClick, inverted, maxDepth) {
		var row = inverted ? maxDepth - depth : depth;
		var f = frame(box, n, x, w, row);
		f.addEventListener('click', function () {
			onClick(n);
		});
		var deepest = depth;
		n.kids.forEach(function (k) {
			var kw = weight(k) * scale;
			if (kw >= MIN_PX) {
				var d = layout(box, k, x, kw, depth + 1, scale, onClick, inverted, maxDepth);
				if (d > deepest) deepest = d;
			}
			x += kw;
		});
		return deepest;
	}

	function depthOf(n, scale) {
		var d = 0;
		n.kids.forEach(function (k) {
			if (weight(k) * scale >= MIN_PX) d = Math.max(d, 1 + depthOf(k, scale));
		});
		return d;
	}

	function drawFlame() {
		var box = $('flame');
		box.textContent = '';
		var width = box.clientWidth || 1000;
		var z = state.zoom;
		/* the zoomed frame's callers, full width above it */
		var chain = [];
		for (var p = z; p.id !== 0; p = nodes[p.parent]) chain.unshift(nodes[p.parent]);
		chain.forEach(function (c, i) {
			frame(box, c, 0, width, i, 'caller').addEventListener('click', function () {
				zoomTo(c);
			});
		});
		var total = weight(z);
		var deepest = chain.length;
		if (total > 0)
			deepest = layout(box, z, 0, width, chain.length, width / total, zoomTo, false, 0);
		box.style.height = (deepest + 1) * FRAME_H + 'px';
		$('reset').disabled = z.id === 0;
	}

	function zoomTo(n) {
		state.zoom = n;
		drawFlame();
	}

	/* ---- search: highlight and the share of samples under the matches ---- */

	function matchedShare() {
		var hit = 0, count = 0;
		(function walk(n, inside) {
			var m = matches(n);
			if (m) count++;
			if (m && !inside) hit += weight(n);
			n.kids.forEach(function (k) {
				walk(k, inside || m);
			});
		})(nodes[0], false);
		return { share: weight(nodes[0]) > 0 ? hit / weight(nodes[0]) : 0, frames: count };
	}

	function onSearch() {
		state.search = $('search').value.trim().toLowerCase();
		var out = $('matched');
		if (state.search === '') {
			out.textContent = '';
		} else {
			var m = matchedShare();
			out.textContent = 'matched: ' + pct(m.share) + ' of ' +
				(state.mode === 'base' ? 'base' : 'head') + ' samples in ' + m.frames +
				' frame' + (m.frames === 1 ? '' : 's');
		}
		drawAll();
	}

	/* ---- the sandwich view ---- */

	function key(n) {
		return n.name + '\u0000' + n.module;
	}
	function merged(name, module) {
		return { id: -1, name: name, module: module, head: 0, base: 0, flag: 0, kids: [], byKey: {} };
	}
	function mergeChild(into, n) {
		var k = key(n), c = into.byKey[k];
		if (!c) {
			c = merged(n.name, n.module);
			c.flag = n.flag;
			into.byKey[k] = c;
			into.kids.push(c);
		}
		return c;
	}
	/* callees: every outermost occurrence's subtree, merged by name */
	function mergeSubtree(into, n) {
		into.head += n.head;
		into.base += n.base;
		n.kids.forEach(function (k) {
			mergeSubtree(mergeChild(into, k), k);
		});
	}

	function sandwich(fnKey) {
		var occ = [];
		(function walk(n, inside) {
			var m = n.id !== 0 && key(n) === fnKey;
			if (m && !inside) occ.push(n);
			n.kids.forEach(function (k) {
				walk(k, inside || m);
			});
		})(nodes[0], false);
		if (!occ.length) return null;
		var callees = merged(occ[0].name, occ[0].module), callers = merged(occ[0].name, occ[0].module);
		callees.flag = callers.flag = occ[0].flag;
		occ.forEach(function (n) {
			mergeSubtree(callees, n);
			/* callers: the path up from n, weighted by n */
			var c = callers;
			c.head += n.head;
			c.base += n.base;
			for (var p = nodes[n.parent]; p.id !== 0; p = nodes[p.parent]) {
				c = mergeChild(c, p);
				c.head += n.head;
				c.base += n.base;
			}
		});
		return { callers: callers, callees: callees, occurrences: occ.length };
	}

	function drawSandwich() {
		var up = $('callers'), down = $('callees');
		up.textContent = '';
		down.textContent = '';
		var s = state.sandwich ? sandwich(state.sandwich) : null;
		$('sandwich-info').textContent = s ? s.callers.name + ': callers above (the function at ' +
			'the bottom), callees below (the function at the top); ' + s.occurrences +
			' call site' + (s.occurrences === 1 ? '' : 's') : 'Choose a function.';
		if (!s) return;
		var width = up.clientWidth || 1000;
		var total = weight(s.callers);
		if (!(total > 0)) return;
		var scale = width / total;
		var noop = function (n) {
			if (n.id >= 0) {
				zoomTo(n);
				$('flame').scrollIntoView();
			}
		};
		var d = depthOf(s.callers, scale);
		layout(up, s.callers, 0, width, 0, scale, noop, true, d);
		up.style.height = (d + 1) * FRAME_H + 'px';
		var e = layout(down, s.callees, 0, width, 0, scale, noop, false, 0);
		down.style.height = (e + 1) * FRAME_H + 'px';
	}

	function showSandwich(name, module) {
		state.sandwich = name + '\u0000' + module;
		$('sandwich-fn').value = state.sandwich;
		drawSandwich();
	}

	/* ---- sortable tables ---- */

	function table(id, columns, rows) {
		var t = $(id);
		var sortBy = -1, desc = false;
		function render() {
			t.textContent = '';
			var thead = el('thead'), tr = el('tr');
			columns.forEach(function (c, i) {
				var th = el('th', c.num ? 'num' : '', c.title + (i === sortBy ? (desc ? ' ▼' : ' ▲') : ''));
				th.addEventListener('click', function () {
					desc = sortBy === i ? !desc : !!c.num;
					sortBy = i;
					rows.sort(function (a, b) {
						var x = c.value(a), y = c.value(b);
						var r = x < y ? -1 : x > y ? 1 : 0;
						return desc ? -r : r;
					});
					render();
				});
				tr.appendChild(th);
			});
			thead.appendChild(tr);
			t.appendChild(thead);
			var tbody = el('tbody');
			rows.forEach(function (r) {
				var row = el('tr');
				columns.forEach(function (c) {
					var td = el('td', c.num ? 'num' : '');
					if (c.cell) c.cell(td, r);
					else td.textContent = c.text ? c.text(r) : String(c.value(r));
					row.appendChild(td);
				});
				tbody.appendChild(row);
			});
			t.appendChild(tbody);
		}
		render();
	}

	function changeOf(r) {
		return r.change === null ? Infinity : r.change;
	}
	function changeCell(r) {
		if (r.change === null) return 'new';
		return (r.change >= 0 ? '+' : '') + (100 * r.change).toFixed(1) + ' %';
	}
	/* The smallest slowdown the report would have flagged as the item's only change (JSON
	 * detectable_change); none for items not judged by the log-ratio test. */
	function detectableOf(r) {
		return r.detectable === null ? Infinity : r.detectable;
	}
	function detectableCell(r) {
		if (r.detectable === null) return '';
		if (r.detectable > 10) return 'over +1000 %';
		return '+' + (100 * r.detectable).toFixed(0) + ' %';
	}
	var common = [
		{ title: 'base CPU (per run)', num: true, value: function (r) { return r.base_seconds; },
			text: function (r) { return seconds(r.base_seconds); } },
		{ title: 'head CPU', num: true, value: function (r) { return r.head_seconds; },
			text: function (r) { return seconds(r.head_seconds); } },
		{ title: 'change', num: true, value: changeOf, text: changeCell },
		{ title: 'q', num: true, value: function (r) { return r.q; },
			text: function (r) { return r.q.toPrecision(2); } },
		{ title: 'could see', num: true, value: detectableOf, text: detectableCell },
		/* a function flagged among a flagged test's own functions says which test */
		{ title: 'result', value: function (r) {
			return r.within === undefined ? r.result : r.result + ' (within ' + r.within + ')';
		} }
	];

	/* ---- wiring ---- */

	function drawAll() {
		drawFlame();
		drawSandwich();
	}

	['base', 'head', 'diff'].forEach(function (m) {
		$('mode-' + m).addEventListener('click', function () {
			state.mode = m;
			['base', 'head', 'diff'].forEach(function (o) {
				$('mode-' + o).setAttribute('aria-pressed', o === m ? 'true' : 'false');
			});
			onSearch();
		});
	});
	$('search').addEventListener('input', onSearch);
	$('reset').addEventListener('click', function () {
		zoomTo(nodes[0]);
	});

	var select = $('sandwich-fn');
	data.functions.forEach(function (f) {
		var k = f.name + '\u0000' + f.module;
		for (var i = 0; i < select.options.length; i++) if (select.options[i].value === k) return;
		var o = el('option', '', f.name + (f.module ? ' [' + f.module + ']' : ''));
		o.value = k;
		select.appendChild(o);
	});
	select.addEventListener('change', function () {
		state.sandwich = select.value || null;
		drawSandwich();
	});

	table('tests-table', [{ title: 'test', value: function (r) { return r.name; },
		text: function (r) { return r.name === '' ? '(outside tests)' : r.name; } }].concat(common),
		data.tests.slice());
	table('functions-table', [
		{ title: 'function', value: function (r) { return r.name; }, cell: function (td, r) {
			var b = el('button', 'link', r.name);
			b.title = 'sandwich view: callers and callees of ' + r.name;
			b.addEventListener('click', function () {
				showSandwich(r.name, r.module);
				$('sandwich').scrollIntoView();
			});
			td.appendChild(b);
		} },
		{ title: 'module', value: function (r) { return r.module; } },
		{ title: 'measure', value: function (r) { return r.measure; } }
	].concat(common), data.functions.slice());

	$('explore').hidden = false;
	if (data.functions.length && data.functions[0].result !== 'unchanged')
		showSandwich(data.functions[0].name, data.functions[0].module);
	drawAll();
	window.addEventListener('resize', drawAll);
	document.documentElement.setAttribute('data-ciprof-ready', 'true');
})();
