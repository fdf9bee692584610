"""What the autotuner measured, recorded on an H200 (tests/data/autotune/h200-captures.jsonl: the tutorial matmul at a
decode and a prefill shape, captured by bench/autotune/gpu_autotune.sh); checked here on real CPU compiles. The GPU
exists only in that recording."""
import json
import os
import shutil

from tritonlens.checks.tuning import KeyTuning, MeasuredAdvice, measured_advice, summarize
from tritonlens.frontend.captures import load_captures, load_tunings
from tritonlens.pipeline import Checker
from tritonlens.settings import Settings
from conftest import evidence

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
FIXTURE = os.path.join(HERE, "data", "autotune", "h200-captures.jsonl")


def _workspace(tmp_path):
    (tmp_path / ".tritonlens").mkdir()
    (tmp_path / "bench" / "autotune").mkdir(parents=True)
    shutil.copy(os.path.join(REPO, "bench", "autotune", "tutorial_matmul.py"), tmp_path / "bench" / "autotune")
    shutil.copy(FIXTURE, tmp_path / ".tritonlens" / "captures.jsonl")
    return tmp_path


def test_tuning_lines_load_and_summarize(tmp_path):
    ws = _workspace(tmp_path)
    tunings = load_tunings(str(ws))
    assert len(tunings) == 2
    caps, problems = load_captures(str(ws))
    assert not problems and all(c.get("record") != "tuning" for c in caps)
    summary = summarize([KeyTuning.from_record(t) for t in tunings])
    assert len(summary.keys) == 2 and len(summary.dead) == 6
    decode = next(kt for kt in summary.keys if kt.key[0] == 16)
    assert decode.chosen_config.value("BLOCK_SIZE_M") == 32 and decode.chosen_config.programs == 128
    # the two configs with more programs (256) have other tiles and options too: they do not judge "more programs"
    advice = measured_advice(decode, "more_programs")
    assert advice.outcome == "none alike" and advice.unlike == 2 and advice.best_us is None


def test_bad_tuning_lines_are_reported(tmp_path):
    ws = _workspace(tmp_path)
    line = json.loads(next(l for l in open(FIXTURE) if '"tuning"' in l))
    bad = [dict(line, chosen=99), dict(line, configs=[{"kwargs": {}, "time_us": -1}]), dict(line, kernel="a\x1b")]
    with open(ws / ".tritonlens" / "captures.jsonl", "a") as f:
        f.writelines(json.dumps(b) + "\n" for b in bad)
    _, problems = load_captures(str(ws))
    assert len(problems) == 3
    assert len(load_tunings(str(ws))) == 2


def test_check_shows_tuning_and_small_m_tile(tmp_path):
    ws = _workspace(tmp_path)
    path = str(ws / "bench" / "autotune" / "tutorial_matmul.py")
    with Checker(Settings(target="cuda:90", gpu="h200")) as checker:
        report = checker.check_file(path)
    kr = report.kernels[0]
    codes = {f.code: f for f in kr.findings}
    assert codes["LAUNCH005"].message.startswith("autotuner: 6 of 8 configs never within 10% of the best — "), \
        codes["LAUNCH005"].message
    assert "6 of 8 configs never came within 10%" in evidence(codes["LAUNCH005"])
    assert codes["LAUNCH005"].to_json()["tuning"]["dead_cost_s"] > 1
    tile = codes["LAUNCH004"]
    assert tile.line == 57 and tile.data["extent"] == 16 and tile.data["fit"] == 16
    assert MeasuredAdvice.from_data(tile.data).outcome == "none measured"


def test_check_fix_adds_the_fitting_config_and_the_tile_finding_goes(tmp_path, capsys):
    """`check --fix` on the decode capture: the literal autotune list gains a config with BLOCK_SIZE_M = 16 (proven by
    re-compiling the captured spec with it); checked again, LAUNCH004 is gone — the advice is in the list, untimed —
    and LAUNCH005 says the capture has not timed the new config."""
    from tritonlens.cli import main as cli_main

    ws = _workspace(tmp_path)
    path = str(ws / "bench" / "autotune" / "tutorial_matmul.py")
    before = open(path, encoding="utf-8").read()
    code = cli_main(["check", path, "--fix", "--target", "cuda:90", "--workers", "1"])
    out, _ = capsys.readouterr()
    after = open(path, encoding="utf-8").read()
    assert "LAUNCH004 fixed: Add a config BLOCK_SIZE_M=16" in out, out
    assert "1 fix(es) applied in 1 file(s)" in out and code == 0
    added = [line for line in after.splitlines() if line not in before.splitlines()]
    assert len(added) == 2 and added[0].lstrip().startswith('triton.Config({"BLOCK_SIZE_M": 16, '), added
    assert all(len(line) <= 120 for line in added)
    with Checker(Settings(target="cuda:90")) as checker:
        report = checker.check_file(path)
    kr = report.kernels[0]
    assert not [f for f in kr.findings if f.code == "LAUNCH004"]
    assert len(kr.kernel.autotune_configs) == 9
    tuning = next(f for f in kr.findings if f.code == "LAUNCH005")
    assert len(tuning.data["untimed"]) == 1 and tuning.data["untimed"][0].startswith("BLOCK_SIZE_M=16")
    assert "capture again to have the autotuner time it" in evidence(tuning)


def test_capture_notes_a_library_autotuner_that_overrides_run():
    """A library's Autotuner subclass with its own `run` (FlagGems' LibTuner benchmarks there, not in Autotuner.run)
    gets the capture's tuning wrapper, whether it is defined before the hook is installed or after (at the
    library's import)."""
    from triton.runtime.autotuner import Autotuner

    from tritonlens.gpu.capture_hook import _wrap_subclass_runs
    from tritonlens.gpu.patching import MARK

    class Before(Autotuner):
        def run(self, *args, **kwargs):
            return "before"

    class Hook:
        def wrap_autotune_run(self, run):
            def wrapped(tuner, *args, **kwargs):
                return ("noted", run(tuner, *args, **kwargs))

            setattr(wrapped, MARK, True)
            return wrapped

    saved = Autotuner.__dict__.get("__init_subclass__")
    try:
        _wrap_subclass_runs(Autotuner, Hook())

        class After(Autotuner):
            def run(self, *args, **kwargs):
                return "after"

        class Inherits(After):  # no run of its own: After's wrapped run, not wrapped twice
            pass

        me = object.__new__(Inherits)
        assert Before.run(object.__new__(Before)) == ("noted", "before")
        assert After.run(me) == ("noted", "after") and Inherits.run is After.run
    finally:
        if saved is None:
            del Autotuner.__init_subclass__
        else:
            Autotuner.__init_subclass__ = saved


def test_check_fix_prune_removes_the_dead_configs_and_keeps_each_keys_choice(tmp_path, capsys):
    """LAUNCH005's fix on the H200 capture (decode and prefill keys, 8 configs, 6 never within 10% of the best):
    `check --fix` alone leaves the list as it is; `--fix-prune` removes the 6 dead configs, keeps the two chosen
    ones, and says the autotuning time saved (their recorded trial times)."""
    from tritonlens.cli import main as cli_main

    ws = _workspace(tmp_path)
    path = str(ws / "bench" / "autotune" / "tutorial_matmul.py")
    with Checker(Settings(target="cuda:90")) as checker:
        kr = checker.check_file(path).kernels[0]
    tuning = next(f for f in kr.findings if f.code == "LAUNCH005")
    plan = tuning.data["prune"]
    assert plan["why_not"] is None and len(plan["positions"]) == 6 and plan["saves_s"] > 1
    assert f"saving {plan['saves_s']:.2f} s of autotuning over the 2 captured keys" in evidence(tuning)
    chosen = {kt.chosen_config.label() for kt in kr.tuning.keys}
    assert len(chosen) == 2 and not chosen & set(plan["configs"])

    cli_main(["check", path, "--fix", "--select", "LAUNCH005", "--target", "cuda:90", "--workers", "1"])
    out, _ = capsys.readouterr()
    assert "0 fix(es) applied" in out and "LAUNCH005 fixed" not in out  # pruning is asked for, never implied

    cli_main(["check", path, "--fix-prune", "--select", "LAUNCH005", "--target", "cuda:90", "--workers", "1"])
    out, _ = capsys.readouterr()
    assert f"LAUNCH005 fixed: Remove the 6 dead configs from the autotune list (saves {plan['saves_s']:.2f} s" in out
    with Checker(Settings(target="cuda:90")) as checker:
        kr2 = checker.check_file(path).kernels[0]
    left = [f"BLOCK_SIZE_M={c['kwargs']['BLOCK_SIZE_M']}, BLOCK_SIZE_N={c['kwargs']['BLOCK_SIZE_N']}"
            for c in kr2.kernel.autotune_configs]
    assert sorted(left) == ["BLOCK_SIZE_M=128, BLOCK_SIZE_N=256", "BLOCK_SIZE_M=32, BLOCK_SIZE_N=64"]
    after = next(f for f in kr2.findings if f.code == "LAUNCH005")
    assert "no dead config is left in the autotune list" in evidence(after)


def test_pruning_is_not_offered_when_a_launched_key_was_not_measured(tmp_path):
    """Without the prefill key's tuning line, the capture still has the prefill launch: a config dead at decode may
    win at prefill (one did: 128×256 is prefill's choice), so no prune is offered and LAUNCH005 says why."""
    ws = _workspace(tmp_path)
    lines = [line for line in open(FIXTURE, encoding="utf-8")
             if not ('"tuning"' in line and '"key": [8192' in line)]
    (ws / ".tritonlens" / "captures.jsonl").write_text("".join(lines))
    with Checker(Settings(target="cuda:90")) as checker:
        kr = checker.check_file(str(ws / "bench" / "autotune" / "tutorial_matmul.py")).kernels[0]
    tuning = next(f for f in kr.findings if f.code == "LAUNCH005")
    assert "1 of the 2 keys the captured launches ran have no autotuner timings" in tuning.data["prune"]["why_not"]
    assert "pruning not offered" in evidence(tuning)
    from tritonlens.fixes.tuning import prune_candidates

    text = open(kr.kernel.path, encoding="utf-8").read()
    assert not list(prune_candidates(kr, tuning, text))


def test_tuning_line_of_a_kernel_under_heuristics():
    """`@autotune` over `@triton.heuristics` (FlagGems' bmm): the tuning line names the kernel's own function and
    file, not the Heuristics wrapper (which has `arg_names` and `fn` too)."""
    import triton
    import triton.language as tl

    from tritonlens.gpu.capture_hook import _Hook

    @triton.autotune(configs=[triton.Config({"B": 16}), triton.Config({"B": 32})], key=["n"])
    @triton.heuristics({"EVEN": lambda args: args["n"] % 16 == 0})
    @triton.jit
    def scaled(x_ptr, n, B: tl.constexpr, EVEN: tl.constexpr):
        tl.store(x_ptr + tl.arange(0, B), tl.arange(0, B))

    written = []

    class Writer:
        def append_records(self, recs):
            written.extend(recs)

    hook = object.__new__(_Hook)
    hook.writer, hook.root, hook.triton_version, hook._target = Writer(), REPO, "3.6.0", lambda: "cuda:90"
    timings = {c: [0.01 * (i + 1), 0.01, 0.01] for i, c in enumerate(scaled.configs)}
    scaled.cache[(64,)] = scaled.configs[0]
    frame = {"key": (64,), "measured": {}, "chosen_grid": (4,), "trials": 2}
    hook.note_tuning(scaled, frame, timings, (None, 64), {})
    (rec,) = written
    assert rec["kernel"] == "scaled" and rec["path"] == "tests/test_tuning.py" and rec["chosen"] == 0
    assert [c["time_us"] for c in rec["configs"]] == [10.0, 20.0]


def test_proposals_measured_slower_on_the_gpu_are_withheld(tmp_path, capsys):
    """The tutorial matmul's three 16-row proposals, timed on the H200's captured decode launch
    (bench/results/autotune/proposals.jsonl: 0.98×, 0.84×, 0.75× of the chosen config, outputs equal), in the
    workspace's .tritonlens/proposals.jsonl: LAUNCH004 says so and is an info, none is offered, and `check --fix`
    adds no config."""
    from tritonlens.cli import main as cli_main
    from tritonlens.fixes.search import Search
    from tritonlens.report.tuning import proposal_timings

    ws = _workspace(tmp_path)
    shutil.copy(os.path.join(REPO, "bench", "results", "autotune", "proposals.jsonl"),
                ws / ".tritonlens" / "proposals.jsonl")
    path = str(ws / "bench" / "autotune" / "tutorial_matmul.py")
    timings = proposal_timings(str(ws), path, "matmul_kernel")
    assert len(timings) == 3 and not any(t.faster for t in timings.values())
    with Checker(Settings(target="cuda:90")) as checker:
        kr = checker.check_file(path).kernels[0]
    tile = next(f for f in kr.findings if f.code == "LAUNCH004")
    # the advice judged by the measurement: at most an info, and the message says what was measured
    assert tile.severity == "info" and tile.data["proposal_measured"]["outcome"] == "slower"
    assert "all 3 configs proposed with BLOCK_SIZE_M ≤ 16 measured no faster on the captured launch — best 67.2 µs" \
        in evidence(tile), evidence(tile)
    assert not Search(kr, tile, open(path, encoding="utf-8").read(), "LAUNCH004", str(ws)).cands
    before = open(path, encoding="utf-8").read()
    cli_main(["check", path, "--fix", "--select", "LAUNCH004", "--target", "cuda:90", "--workers", "1"])
    out, _ = capsys.readouterr()
    assert "0 fix(es) applied" in out and open(path, encoding="utf-8").read() == before
