/* tritonlens report: IR panes drawn lazily, coloured by the editor's TextMate grammars, linked to the source.
 *
 * The page embeds the grammars of syntaxes/ (the files the VS Code extension contributes) as JSON; `Grammar` below
 * is a small TextMate tokenizer over them (match, begin/end, captures, include of #repository, $self and other
 * scopes), so the page colours IR exactly by the scopes the editor assigns — there is no second highlighter.
 * IR texts sit in <script type="application/json"> blocks and are parsed when a pane first needs them; a pane
 * renders only the lines in view, so megabytes of PTX stay responsive.
 */
(function () {
  "use strict";

  // ------------------------------------------------------------------ TextMate tokenizer
  function compile(src) {
    // Oniguruma and JavaScript agree on what these grammars use (classes, lookahead, lookbehind, groups); `d` gives
    // capture offsets, `g` lets a search start at the tokenizer's position.
    return new RegExp(src, "dg");
  }

  class Grammar {
    constructor(grammars, scopeName) {
      this.grammars = grammars;
      this.scopeName = scopeName;
      this.root = grammars[scopeName];
      this._rules = new Map(); // pattern object -> compiled rule
      this._lists = new Map(); // patterns array -> flattened rules
    }

    rule(p, repo) {
      let r = this._rules.get(p);
      if (r) return r;
      if (p.match !== undefined) {
        r = { kind: "match", re: compile(p.match), name: p.name, captures: p.captures || null };
      } else if (p.begin !== undefined) {
        r = {
          kind: "begin", re: compile(p.begin), name: p.name, contentName: p.contentName,
          beginCaptures: p.beginCaptures || p.captures || null, endCaptures: p.endCaptures || p.captures || null,
          end: p.end, endHasBackref: /\\\d/.test(p.end), patterns: p.patterns || [], repo,
        };
        if (!r.endHasBackref) r.endRe = compile(p.end);
      } else {
        r = null;
      }
      this._rules.set(p, r);
      return r;
    }

    // Leaf rules (match or begin) of a pattern list, includes resolved, in order.
    rules(patterns, repo) {
      let out = this._lists.get(patterns);
      if (out) return out;
      out = [];
      const seen = new Set();
      const walk = (list, rp) => {
        for (const p of list || []) {
          if (p.include !== undefined) {
            const inc = p.include;
            let target = null, trepo = rp;
            if (inc === "$self" || inc === "$base") {
              target = this.root; trepo = this.root.repository || {};
            } else if (inc.startsWith("#")) {
              target = rp[inc.slice(1)];
            } else if (this.grammars[inc]) {
              target = this.grammars[inc]; trepo = target.repository || {};
            }
            if (!target || seen.has(target)) continue;
            seen.add(target);
            if (target.match !== undefined || target.begin !== undefined) {
              const r = this.rule(target, trepo);
              if (r) out.push(r);
            } else {
              walk(target.patterns, trepo);
            }
            seen.delete(target);
          } else if (p.match !== undefined || p.begin !== undefined) {
            const r = this.rule(p, rp);
            if (r) out.push(r);
          } else if (p.patterns) {
            walk(p.patterns, rp);
          }
        }
      };
      walk(patterns, repo);
      this._lists.set(patterns, out);
      return out;
    }

    initialStack() {
      if (!this._initial) {
        const repo = this.root.repository || {};
        const rules = this.rules(this.root.patterns, repo);
        this._initial = { parent: null, rules, scopes: [this.scopeName], endRe: null };
        this._rootBegins = rules.filter((r) => r.kind === "begin").map((r) => r.re);
      }
      return this._initial;
    }

    // The stack after a line, without its tokens. From the root state a line that no root `begin` regex matches
    // anywhere cannot push (a search from 0 tries every position), so it leaves the root state: one search per
    // begin rule instead of tokenizing the line. Lines that may begin something are tokenized in full.
    nextStack(line, stack) {
      if (stack === this._initial) {
        let may = false;
        for (const re of this._rootBegins) { re.lastIndex = 0; if (re.test(line)) { may = true; break; } }
        if (!may) return stack;
      }
      return this.tokenizeLine(line, stack, true).stack;
    }

    // Tokens of one line: [start, end, scopes] runs; and the stack for the next line (only that with `stateOnly`).
    tokenizeLine(line, stack, stateOnly) {
      const tokens = [];
      const emit = stateOnly ? () => {} : (a, b, scopes) => { if (b > a) tokens.push([a, b, scopes]); };
      const paint = stateOnly ? () => {} : (m, scopes, captures) => this.paint(tokens, m, scopes, captures);
      // A rule's match found from an earlier position still stands while it starts at or after `pos` (a search
      // finds the leftmost start), and "no match" stays true: each regex runs a few times per line, not per token.
      const found = new Map();
      let pos = 0, guard = 0;
      for (;;) {
        if (++guard > 10000) { emit(pos, line.length, stack.scopes); break; }
        let best = null, bestRule = null, isEnd = false;
        if (stack.endRe) {
          stack.endRe.lastIndex = pos;
          const m = stack.endRe.exec(line);
          if (m) { best = m; isEnd = true; }
        }
        for (const r of stack.rules) {
          let m = found.get(r);
          if (m === undefined || (m !== null && m.index < pos)) {
            r.re.lastIndex = pos;
            m = r.re.exec(line);
            found.set(r, m);
          }
          if (m && (!best || m.index < best.index)) { best = m; bestRule = r; isEnd = false; }
          if (best && best.index === pos && !isEnd && bestRule === r) break; // nothing can start earlier
        }
        if (!best || (best.index >= line.length && !isEnd)) { emit(pos, line.length, stack.scopes); break; }
        emit(pos, best.index, stack.scopes);
        const start = best.index, stop = best.index + best[0].length;
        if (isEnd) {
          const outer = stack.parent.scopes.concat(stack.ownName ? [stack.ownName] : []);
          paint(best, outer, stack.endCaptures);
          stack = stack.parent;
        } else if (bestRule.kind === "match") {
          paint(best, stack.scopes.concat(bestRule.name ? [bestRule.name] : []), bestRule.captures);
        } else {
          const withName = stack.scopes.concat(bestRule.name ? [bestRule.name] : []);
          paint(best, withName, bestRule.beginCaptures);
          let endRe = bestRule.endRe;
          if (!endRe) {
            const src = bestRule.end.replace(/\\(\d)/g, (_, d) => (best[+d] || "").replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
            endRe = compile(src);
          }
          const pushed = {
            parent: stack, rules: this.rules(bestRule.patterns, bestRule.repo), endRe,
            scopes: withName.concat(bestRule.contentName ? [bestRule.contentName] : []),
            ownName: bestRule.name, endCaptures: bestRule.endCaptures, beganAt: start,
          };
          if (stop === pos && stack.beganAt === pos && stack.parent && stack.endRe && stack.endRe.source === endRe.source) {
            emit(pos, line.length, stack.scopes); break; // a zero-width begin that would loop forever
          }
          stack = pushed;
        }
        if (stop === pos) {
          if (isEnd || bestRule.kind === "begin") { if (pos >= line.length) break; continue; }
          emit(pos, pos + 1, stack.scopes); // a zero-width match: step over one character
          pos += 1;
        } else {
          pos = stop;
        }
        if (pos >= line.length && !(stack.endRe)) break;
        if (pos > line.length) break;
      }
      return { tokens, stack };
    }

    // Scopes per character of a match: the rule's name over all of it, each capture's over its span (outer groups
    // are numbered before the groups they hold, so painting in number order leaves the innermost on top).
    paint(tokens, m, scopes, captures) {
      const start = m.index, len = m[0].length;
      if (!len) return;
      if (!captures) { tokens.push([start, start + len, scopes]); return; }
      const per = new Array(len).fill(scopes);
      const groups = Object.keys(captures).map(Number).sort((a, b) => a - b);
      for (const g of groups) {
        const span = m.indices[g];
        const c = captures[g];
        if (!span || !c || !c.name) continue;
        const made = new Map(); // one scopes array per distinct base, not one per character
        for (let i = span[0]; i < span[1]; i++) {
          const base = g === 0 ? scopes : per[i - start];
          let next = made.get(base);
          if (!next) made.set(base, (next = base.concat([c.name])));
          per[i - start] = next;
        }
      }
      let a = 0;
      for (let i = 1; i <= len; i++) {
        if (i === len || per[i] !== per[a]) { tokens.push([start + a, start + i, per[a]]); a = i; }
      }
    }
  }

  // Colours follow VS Code's default themes by scope prefix, most specific first.
  const THEME = [
    ["comment", "tk-comment"], ["string", "tk-string"], ["constant.numeric", "tk-number"], ["constant", "tk-constant"],
    ["keyword.other.opcode.memory", "tk-mem"], ["keyword.other.opcode.mma", "tk-mma"], ["keyword.control", "tk-control"],
    ["keyword.operator", "tk-operator"], ["keyword", "tk-keyword"], ["storage.type", "tk-type"],
    ["storage.modifier", "tk-modifier"], ["storage", "tk-storage"], ["entity.name.function", "tk-function"],
    ["entity.name.type", "tk-type"], ["entity.name.label", "tk-label"], ["entity.name", "tk-entity"],
    ["entity.other.attribute-name", "tk-attr"], ["support.function", "tk-function"], ["support", "tk-support"],
    ["variable.language", "tk-varlang"], ["variable", "tk-variable"], ["punctuation", "tk-punct"],
    ["invalid", "tk-invalid"],
  ];
  const classCache = new Map();
  function scopeClass(scopes) {
    const key = scopes.join(" ");
    let cls = classCache.get(key);
    if (cls !== undefined) return cls;
    cls = "";
    outer: for (let i = scopes.length - 1; i > 0; i--) {
      for (const [prefix, c] of THEME) {
        if (scopes[i] === prefix || scopes[i].startsWith(prefix + ".")) { cls = c; break outer; }
      }
    }
    classCache.set(key, cls);
    return cls;
  }

  function esc(s) {
    return s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
  }

  // ------------------------------------------------------------------ data
  const blobs = new Map();
  function blob(id) {
    if (!blobs.has(id)) {
      const el = document.getElementById(id);
      blobs.set(id, el ? JSON.parse(el.textContent) : null);
    }
    return blobs.get(id);
  }
  const GRAMMARS = blob("tl-grammars") || {};
  const grammarCache = new Map();
  function grammar(scope) {
    if (!GRAMMARS[scope]) return null;
    if (!grammarCache.has(scope)) grammarCache.set(scope, new Grammar(GRAMMARS, scope));
    return grammarCache.get(scope);
  }

  // ------------------------------------------------------------------ panes
  const LINE_H = 18; // px; must match .ir-line's height in report.css
  const OVERSCAN = 40;

  class Pane {
    constructor(el, kernel) {
      this.el = el;
      this.kernel = kernel;
      this.stage = el.dataset.stage;
      this.ready = false;
      this.selected = new Set();
      this.focus = 0;
    }

    load() {
      if (this.ready) return;
      this.ready = true;
      const data = blob(this.el.dataset.blob) || { text: "", map: [] };
      this.lines = data.text.split("\n");
      if (this.lines.length && this.lines[this.lines.length - 1] === "") this.lines.pop();
      const n = this.lines.length;
      this.src = new Int32Array(n + 2);
      const runs = data.map; // [first IR line, count, source line, ...]
      for (let i = 0; i + 2 < runs.length; i += 3) {
        for (let j = 0; j < runs[i + 1]; j++) this.src[runs[i] + j] = runs[i + 2];
      }
      this.bySrc = null;
      this.grammar = grammar(this.el.dataset.scope);
      this.stacks = this.grammar ? [this.grammar.initialStack()] : null;
      this.scroller = this.el.querySelector(".ir-scroll");
      this.spacer = this.el.querySelector(".ir-spacer");
      this.win = this.el.querySelector(".ir-window");
      this.spacer.style.height = n * LINE_H + "px";
      this.el.querySelector(".ir-count").textContent = n.toLocaleString() + " lines";
      this.scroller.addEventListener("scroll", () => this.schedule());
      this.win.addEventListener("click", (ev) => {
        const line = ev.target.closest(".ir-line");
        if (line) this.kernel.selectFromIr(this, +line.dataset.irLine);
      });
      this.render();
      this.warm();
    }

    // Tokenizer states for the whole text, a slice per idle moment, so that a later jump far down renders at once.
    warm() {
      if (!this.grammar) return;
      const idle = window.requestIdleCallback || ((f) => setTimeout(f, 16));
      const step = () => {
        this.stackAt(Math.min(this.lines.length, this.stacks.length + 2000));
        if (this.stacks.length < this.lines.length) idle(step);
        else this.el.dataset.warm = "true";
      };
      idle(step);
    }

    irLinesFor(srcLine) {
      if (!this.bySrc) {
        this.bySrc = new Map();
        for (let i = 1; i < this.src.length; i++) {
          const s = this.src[i];
          if (s) { if (!this.bySrc.has(s)) this.bySrc.set(s, []); this.bySrc.get(s).push(i); }
        }
      }
      return this.bySrc.get(srcLine) || [];
    }

    stackAt(i) { // the tokenizer state at the start of 1-based line i (computed once, in order)
      const st = this.stacks;
      while (st.length < i) {
        const k = st.length; // state before line k exists; tokenize line k
        st.push(this.grammar.nextStack(this.lines[k - 1], st[k - 1]));
      }
      return st[i - 1];
    }

    lineHtml(i) {
      const text = this.lines[i - 1];
      if (!this.grammar || text.length > 4000) return esc(text);
      const { tokens } = this.grammar.tokenizeLine(text, this.stackAt(i));
      let out = "", at = 0;
      for (const [a, b, scopes] of tokens) {
        if (a > at) out += esc(text.slice(at, a));
        const cls = scopeClass(scopes);
        out += cls ? `<span class="${cls}">${esc(text.slice(a, b))}</span>` : esc(text.slice(a, b));
        at = b;
      }
      return out + esc(text.slice(at));
    }

    schedule() {
      if (this._raf) return;
      this._raf = requestAnimationFrame(() => { this._raf = 0; this.render(); });
    }

    render() {
      if (!this.ready) return;
      const n = this.lines.length;
      const top = this.scroller.scrollTop, h = this.scroller.clientHeight || 400;
      const first = Math.max(1, Math.floor(top / LINE_H) + 1 - OVERSCAN);
      const last = Math.min(n, Math.ceil((top + h) / LINE_H) + OVERSCAN);
      if (first === this.first && last === this.last && !this.dirty) return; // nothing new in view: keep the nodes
      this.dirty = false;
      const parts = [];
      for (let i = first; i <= last; i++) {
        const s = this.src[i];
        const cls = "ir-line" + (s ? " mapped" : "") + (this.selected.has(i) ? " selected" : "") + (i === this.focus ? " focus" : "");
        parts.push(`<div class="${cls}" data-ir-line="${i}"${s ? ` data-src="${s}"` : ""}><span class="ln">${i}</span>` +
                   `<span class="sl">${s ? s : ""}</span><span class="code">${this.lineHtml(i)}</span></div>`);
      }
      this.win.style.transform = `translateY(${(first - 1) * LINE_H}px)`;
      this.win.innerHTML = parts.join("");
      this.first = first; this.last = last;
    }

    select(srcLine, scroll) {
      this.load();
      const lines = srcLine ? this.irLinesFor(srcLine) : [];
      this.selected = new Set(lines);
      this.dirty = true;
      const count = this.el.querySelector(".ir-selected");
      count.textContent = srcLine ? `line ${srcLine}: ${lines.length} ${lines.length === 1 ? "line" : "lines"}` : "";
      this.el.dataset.selectedCount = String(lines.length);
      if (scroll && lines.length) {
        const want = (lines[0] - 1) * LINE_H;
        const top = this.scroller.scrollTop, h = this.scroller.clientHeight;
        if (want < top || want > top + h - LINE_H) this.scroller.scrollTop = Math.max(0, want - LINE_H * 3);
      }
      this.render();
    }

  }

  // ------------------------------------------------------------------ kernels
  class Kernel {
    constructor(section) {
      this.section = section;
      this.specs = JSON.parse(section.querySelector(".kernel-data").textContent);
      this.spec = 0;
      this.selectedLine = 0;
      this.panes = new Map(); // spec index -> [Pane]
      section.querySelectorAll(".spec-tab, .matrix-row").forEach((el) =>
        el.addEventListener("click", () => this.showSpec(+el.dataset.spec)));
      const src = section.querySelector(".source");
      if (src) {
        src.addEventListener("click", (ev) => {
          if (ev.target.closest("a, summary, details")) return;
          const row = ev.target.closest(".src-line");
          if (row) this.selectSource(+row.dataset.sourceLine, true);
        });
      }
      this.drawCosts();
    }

    panesOf(i) {
      if (!this.panes.has(i)) {
        const box = this.section.querySelector(`.spec-panes[data-spec="${i}"]`);
        this.panes.set(i, box ? [...box.querySelectorAll(".pane")].map((el) => new Pane(el, this)) : []);
      }
      return this.panes.get(i);
    }

    activate() { for (const p of this.panesOf(this.spec)) p.load(); }

    showSpec(i) {
      this.spec = i;
      this.section.dataset.spec = String(i);
      this.section.querySelectorAll("[data-spec]").forEach((el) => {
        if (el.classList.contains("spec-panes") || el.classList.contains("spec-metrics")) el.hidden = +el.dataset.spec !== i;
        if (el.classList.contains("spec-tab") || el.classList.contains("matrix-row")) el.classList.toggle("active", +el.dataset.spec === i);
      });
      const key = (this.specs[i] || {}).key;
      this.section.querySelectorAll(".finding").forEach((f) => {
        const specs = f.dataset.specs;
        f.classList.toggle("other-spec", !!specs && !!key && !specs.split(" ").includes(key));
      });
      this.activate();
      this.drawCosts();
      if (this.selectedLine) this.selectSource(this.selectedLine, true);
    }

    drawCosts() {
      const spec = this.specs[this.spec];
      const cost = (spec && spec.cost) || {};
      let max = 1;
      for (const k in cost) max = Math.max(max, cost[k][0]);
      this.section.querySelectorAll(".src-line").forEach((row) => {
        const bar = row.querySelector(".cost");
        const c = cost[row.dataset.sourceLine];
        if (!c) { bar.innerHTML = ""; bar.title = ""; return; }
        const w = (n) => Math.max(n ? 2 : 0, Math.round((60 * n) / max));
        bar.innerHTML = `<i class="c-ins" style="width:${w(c[0])}px"></i>` +
          (c[1] ? `<i class="c-spill" style="width:${w(c[1])}px"></i>` : "") +
          (c[2] ? `<i class="c-shared" style="width:${w(c[2])}px"></i>` : "");
        bar.title = `${c[0]} ${spec.cost_stage} instructions, ${c[1]} spill ops, ${c[2]} shared-memory ops`;
      });
    }

    selectSource(line, scrollPanes, except) {
      this.selectedLine = line;
      this.section.querySelectorAll(".src-line.selected").forEach((r) => r.classList.remove("selected"));
      const row = this.section.querySelector(`.src-line[data-source-line="${line}"]`);
      if (row) row.classList.add("selected");
      for (const p of this.panesOf(this.spec)) p.select(line, scrollPanes && p !== except);
      return row;
    }

    selectFromIr(pane, irLine) {
      const src = pane.src[irLine];
      pane.focus = irLine;
      pane.dirty = true;
      if (!src) { pane.render(); return; }
      const row = this.selectSource(src, true, pane);
      if (row) {
        const box = row.closest(".source");
        const top = row.offsetTop - box.offsetTop;
        if (top < box.scrollTop || top > box.scrollTop + box.clientHeight - row.offsetHeight) {
          box.scrollTop = Math.max(0, top - box.clientHeight / 3);
        }
      }
    }
  }

  // ------------------------------------------------------------------ page
  const kernels = new Map();
  function kernelOf(section) {
    if (!kernels.has(section)) kernels.set(section, new Kernel(section));
    return kernels.get(section);
  }

  function start() {
    const sections = document.querySelectorAll("section.kernel");
    sections.forEach((s) => kernelOf(s));
    // Panes load when their kernel comes near the viewport, not before: a report of many kernels opens at once.
    if ("IntersectionObserver" in window) {
      const io = new IntersectionObserver((entries) => {
        for (const e of entries) if (e.isIntersecting) { kernelOf(e.target).activate(); io.unobserve(e.target); }
      }, { rootMargin: "200px" });
      sections.forEach((s) => io.observe(s));
    } else {
      sections.forEach((s) => kernelOf(s).activate());
    }
    document.documentElement.dataset.ready = "true";
  }

  window.tritonlens = {
    Grammar, scopeClass,
    tokenize(scope, lines) { // for tests and scripts: the scopes of each token, line by line
      const g = grammar(scope);
      if (!g) return null;
      let stack = g.initialStack();
      return lines.map((line) => {
        const r = g.tokenizeLine(line, stack);
        stack = r.stack;
        return r.tokens.map(([a, b, scopes]) => [a, b, scopes.join(" ")]);
      });
    },
    kernel(name) {
      const s = document.querySelector(`section.kernel[data-kernel="${CSS.escape(name)}"]`);
      return s ? kernelOf(s) : null;
    },
  };

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
