#!/usr/bin/env python3
"""scripts/zoo.py — the model zoo runner: real architectures from torchvision
and transformers, built from their configurations with random weights (no
download: the GPU machine has no network), exported, compiled with kfuse,
checked against the model run in float64 and timed side by side with eager
and torch.compile, one fresh process per (model, dtype).

    python3 scripts/zoo.py --kfuse dist/kfuse-portable/bin/kfuse --out out/zoo --dtype fp32,fp16,bf16
    python3 scripts/zoo.py --kfuse build/kfuse --out zoo-cpu --cpu-check --small --dtype fp32,bf16
    python3 scripts/zoo.py --out out/zoo --summarize        # no GPU, no torch
    bash scripts/kb_gpus.sh --runner zoo --gpus 2 --out out/zoo --kfuse ...   # a shard per GPU

The zoo (ZOO below; --list prints the selection): torchvision's
classification families (resnet, resnext, wide_resnet, vgg, alexnet,
densenet, mobilenet v2/v3, efficientnet, efficientnet_v2, regnet, convnext,
shufflenet, squeezenet, mnasnet, googlenet, inception_v3, vit, swin, maxvit)
at batch 32 x 3 x 224 x 224 (inception 299), its segmentation models (fcn,
deeplabv3, lraspp) at 8 x 3 x 520 x 520 and its video models (r3d_18, mc3_18,
r2plus1d_18 at 8 x 3 x 16 x 112 x 112; s3d, mvit, swin3d at 2 x 3 x 16 x 224
x 224), all with weights=None (and weights_backbone=None); transformers'
encoders (BERT-base, BERT-large, RoBERTa-base, DistilBERT), decoders (GPT-2,
GPT-2 medium, a Llama-3.2-1B-sized Llama with GQA and llama3 RoPE, a
Mistral-style 1B with GQA, a Qwen2-0.5B-sized Qwen2 with QKV bias), the T5-base
encoder, vision (ViT-base, CLIP ViT-B/16 vision tower) and audio (Whisper-small
encoder on 30 s of 80 mel bins, wav2vec2-base on 10 s of 16 kHz) at batch 8 x
512 tokens (vision 32 images), each from its Config class with the published
sizes, base models (hidden states out, no LM head), SDPA attention where the
model has it, no attention mask. Each model has a tier: "core" (one or a few
per family: --tier core, for a shorter GPU run) or "all" (every variant, the
default). Names: torchvision's constructor names; the transformers models are
bert-base, llama-1b and so on. A unit of work is a model in a dtype, named
MODEL/DTYPE (resnet50/bf16).

Initialisation (realistic_init()): torchvision's random weights, with two
changes that make the numerical check mean something: weights initialised
to all zeros (ViT's head, its class token) are drawn N(0, 0.02), else the
output is zeros and checks nothing; batch norms get running statistics from
two training-mode passes on N(0, 1) inputs, as a trained network has (with
the defaults the activations of a random network shrink layer by layer:
mobilenet_v3_large's fp32 logits are ~1e-10, all zero in fp16).

--dtype fp32,fp16,bf16: the model is built in fp32 (seeded: the same weights
in every process) and cast with .to(dtype); floating inputs are drawn in fp32
and cast, token ids stay int64. --small (for --cpu-check on a small machine)
keeps every architecture but shrinks the work: torchvision batch 2 (video and
segmentation 1, segmentation at 256 x 256), transformers 2 layers, a vocabulary
of 1024, batch 2 x 128 tokens, 2 images, 2 s of audio; the export then takes
seconds where the full one takes a minute, and the compile sees the same
operators at other sizes (a refusal that depends on sizes can hide).

Per unit (GPU mode, the default), in a fresh process forked from a server that
has imported torch, dynamo, inductor, export, torchvision and transformers
once, with a wall-clock limit (--timeout), so a crash, an OOM kill or a hang
fails that unit alone and is recorded with the stage it reached
("stage": build, export, compile, load, eager, fp64, run, compare, time):
  1. build the model on the CPU (seed --seed), cast, eval mode, and
     kfuse.export it on shape-only (fake) inputs (a real draw if those will
     not export); the exported model is dropped;
  2. `kfuse compile` it (--compile-args passed through, --report; cold wall
     time recorded; on the GPU machine kfuse's judge times its candidates);
     kfuse's `kfuse: error:` line is the record's error; the report's
     whole-module check is recorded (module_check: passed, max_rel_err,
     bound, fallback, first_failure; module_check_s against
     compile_total_s);
  3. build the model again (same seed), move it to the GPU, draw two fresh
     input sets on the GPU, run eager on the first twice (eager_self: its
     own noise), run a float64 copy of it (model.double(), inputs .double():
     the same rounded weights and inputs, so only the arithmetic differs) on
     the GPU (where it does not fit or fails, fp64_error says why), load the
     module with kfuse.load and run it; inputs must come back unchanged;
  4. relative error norms, ||a - b|| / ||b|| over the elements where b is
     finite (a non-finite a there counts as infinite error), the largest over
     the outputs: eager_vs_fp64, kfuse_vs_fp64, kfuse_vs_eager. The verdict
     (verdict() and tolerance() below, the rule in one place):
        kfuse_vs_fp64 <= max(3 x eager_vs_fp64, base),
        base 1e-3 for fp32 (eager's convolutions run in TF32, PyTorch's
        default, and so may kfuse's), 2e-2 for fp16 and bf16;
     eager's error gives no allowance when it is not finite. Without the fp64
     reference: kfuse_vs_eager <= 2 x base (rule "eager");
     where eager's output is non-finite in elements where fp64's is finite
     (the model overflows in the dtype), kfuse is held to eager (rule
     "eager") instead;
     a check that checks little (eager's output all zeros, eager itself
     >= 0.5 from fp64, or that overflow) keeps its verdict and is listed
     ("degenerate");
  5. time eager, torch.compile (default mode; --modes adds others; warmed by
     --warm-jobs N workers before the timing, which fill Inductor's caches
     and with --warm-export also do step 1, CPU work, in parallel)
     and kfuse in the same process with CUDA events (the warm phase and
     the timing alternate in chunks of --warm-chunk units, default
     --warm-jobs, so that a --deadline shorter than the whole warm phase
     still leaves timed units; with --deadline a chunk is no larger than
     the time left can time, by this run's seconds a unit so far): 3 warm-up calls, then
     runs until --budget seconds have passed and at least --min-runs were
     made (at most --max-runs); the median is the figure. A spin kernel sized
     from the host cost of one call is queued ahead of each timed call (GPU
     time for every variant alike; host_ms records the host cost), as
     scripts/kernelbench.py does (its Clock). L2 is flushed before each call
     as there; for whole models it changes little (their weights and
     activations are far larger than L2) and --no-l2-flush drops it. NVML's
     count of processes on the GPU is recorded (gpu_processes).
torch.backends.cuda.matmul.allow_tf32=False, cudnn.allow_tf32=True (PyTorch's
defaults) are set explicitly. kfuse failures are not timed unless
--time-failed.

Statuses: ok, build-fail (the model could not be built: a torchvision or
transformers too old for it), export-fail, compile-fail (kfuse refused it),
load-fail, eager-fail, run-fail (the module raised), mismatch, timeout, crash.
--cpu-check (no GPU): build, export and `kfuse compile` only; ok = compiled,
compile-fail = refused, with kfuse's message.

Selection: --tier core|all, --family resnet,bert, --only NAME,... and --skip
NAME,... (model names, fnmatch patterns such as 'resnet*', or MODEL/DTYPE),
--dtype, --shard K/N (round robin over the units; --shard-costs OLD.jsonl
balances by the seconds each unit took in OLD, longest first), --priority
NAME,... (those models first, in that order), --done OLD.jsonl,... (units
an earlier results file records are left out before the shards are cut:
resuming on another machine or with another number of GPUs). --list
prints the units and stops. Rerunning with the same --out skips units already
in results.jsonl (--redo: all again; --redo-status timeout,crash: those).

Output in --out: results.jsonl (a "run" header per invocation: device,
versions, command, options; a "model" record per unit), summary.md and
summary.json (--summarize rebuilds them without torch: per dtype, units,
compiled, correct, geomean speedups over eager and torch.compile, fast_1;
fast_1 per family; units below 0.9x eager; failures grouped by message; every
unit), logs/ (worker logs of failed units), reports/ (kfuse's compile
reports), reports.tar.gz (both, one file).
"""
import argparse
import concurrent.futures
import datetime
import fnmatch
import json
import math
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
THIS = os.path.abspath(__file__)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import kernelbench as kb  # noqa: E402 — shared helpers (records, processes, the clock); imports no torch

STATUSES = ("ok", "build-fail", "export-fail", "compile-fail", "load-fail", "eager-fail", "run-fail", "mismatch",
            "timeout", "crash")
DTYPES = ("fp32", "fp16", "bf16")

# ---- the tolerance rule (one place; see the docstring) ------------------------------------

TOL_BASE = {"fp32": 1e-3, "fp16": 2e-2, "bf16": 2e-2}
TOL_EAGER_FACTOR = 3.0   # kfuse may be this many times as far from fp64 as eager is
TOL_NO_FP64_FACTOR = 2.0  # without fp64: kfuse against eager within this many times the base


def _finite(x):
    return isinstance(x, (int, float)) and math.isfinite(x)


def tolerance(dtype, eager_err):
    """the largest relative error norm against fp64 that passes for dtype,
    given eager's own (None or non-finite: no allowance from eager)"""
    base = TOL_BASE[dtype]
    if not _finite(eager_err):
        return base
    return max(TOL_EAGER_FACTOR * eager_err, base)


def verdict(dtype, eager_vs_fp64, kfuse_vs_fp64, kfuse_vs_eager):
    """(ok, tol, rule): against fp64 where there is an fp64 reference (rule
    "fp64"), else kfuse against eager (rule "eager"); an error that is None
    or not finite fails"""
    if kfuse_vs_fp64 is not None:
        tol = tolerance(dtype, eager_vs_fp64)
        return _finite(kfuse_vs_fp64) and kfuse_vs_fp64 <= tol, tol, "fp64"
    tol = TOL_NO_FP64_FACTOR * tolerance(dtype, None)
    return _finite(kfuse_vs_eager) and kfuse_vs_eager <= tol, tol, "eager"


# ---- the zoo (data; no torch) -------------------------------------------------------------
#
# an entry: name, family, group, src ("tv": torchvision; "hf": transformers),
# tier, and per size ("full", "small") the inputs [{name, shape, kind
# (float|tokens), high (tokens: the vocabulary)}] and the constructor's
# arguments (tv: kw; hf: config)

ZOO = []


def _img(b, r, ch=3):
    return [{"name": "x", "shape": [b, ch, r, r], "kind": "float"}]


def tv(name, family, tier="all", group="classification", res=224, batch=32, small_res=None, small_batch=2,
       module="models", kw=None, out=None):
    ZOO.append({"name": name, "family": family, "group": group, "src": "tv", "tier": tier, "ctor": name,
                "module": module, "out": out,
                "full": {"inputs": _img(batch, res), "kw": dict(kw or {})},
                "small": {"inputs": _img(small_batch, small_res or res), "kw": dict(kw or {})}})


def tv_video(name, family, tier="all", shape=(8, 3, 16, 112, 112), small=(1, 3, 16, 112, 112)):
    ZOO.append({"name": name, "family": family, "group": "video", "src": "tv", "tier": tier, "ctor": name,
                "module": "models.video", "out": None,
                "full": {"inputs": [{"name": "x", "shape": list(shape), "kind": "float"}], "kw": {}},
                "small": {"inputs": [{"name": "x", "shape": list(small), "kind": "float"}], "kw": {}}})


def tv_seg(name, family, tier="all"):
    tv(name, family, tier, group="segmentation", res=520, batch=8, small_res=256, small_batch=1,
       module="models.segmentation", kw={"weights_backbone": None}, out="out")


def _tokens(b, s, vocab):
    return [{"name": "input_ids", "shape": [b, s], "kind": "tokens", "high": vocab}]


def hf(name, family, group, config_class, config, inputs, small_inputs, small_config, tier="core",
       model_class="AutoModel", call_kw=None):
    small_cfg = dict(config)
    small_cfg.update(small_config)
    ZOO.append({"name": name, "family": family, "group": group, "src": "hf", "tier": tier,
                "config_class": config_class, "model_class": model_class, "call_kw": dict(call_kw or {}),
                "full": {"inputs": inputs, "config": dict(config)},
                "small": {"inputs": small_inputs, "config": small_cfg}})


def hf_text(name, family, group, config_class, config, layers_key, vocab, tier="core", model_class="AutoModel",
            call_kw=None, seq=512, small_vocab=1024):
    hf(name, family, group, config_class, dict(config, vocab_size=vocab), _tokens(8, seq, vocab),
       _tokens(2, 128, small_vocab), {layers_key: 2, "vocab_size": small_vocab}, tier, model_class, call_kw)


# torchvision: classification
for _n, _t in (("resnet18", "core"), ("resnet34", "all"), ("resnet50", "core"), ("resnet101", "all"),
               ("resnet152", "all")):
    tv(_n, "resnet", _t)
for _n, _t in (("resnext50_32x4d", "core"), ("resnext101_32x8d", "all"), ("resnext101_64x4d", "all")):
    tv(_n, "resnext", _t)
tv("wide_resnet50_2", "wide_resnet", "core")
tv("wide_resnet101_2", "wide_resnet")
for _n in ("vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn"):
    tv(_n, "vgg", "core" if _n in ("vgg16", "vgg19_bn") else "all")
tv("alexnet", "alexnet", "core")
for _n in ("densenet121", "densenet161", "densenet169", "densenet201"):
    tv(_n, "densenet", "core" if _n == "densenet121" else "all")
for _n in ("mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large"):
    tv(_n, "mobilenet", "core")
for _i in range(8):
    tv(f"efficientnet_b{_i}", "efficientnet", "core" if _i in (0, 3) else "all")
for _n in ("efficientnet_v2_s", "efficientnet_v2_m", "efficientnet_v2_l"):
    tv(_n, "efficientnet_v2", "core" if _n.endswith("_s") else "all")
for _n in ("regnet_x_400mf", "regnet_x_800mf", "regnet_x_1_6gf", "regnet_x_3_2gf", "regnet_x_8gf", "regnet_x_16gf",
           "regnet_x_32gf", "regnet_y_400mf", "regnet_y_800mf", "regnet_y_1_6gf", "regnet_y_3_2gf", "regnet_y_8gf",
           "regnet_y_16gf", "regnet_y_32gf", "regnet_y_128gf"):
    tv(_n, "regnet", "core" if _n in ("regnet_y_400mf", "regnet_x_3_2gf", "regnet_y_16gf") else "all")
for _n in ("convnext_tiny", "convnext_small", "convnext_base", "convnext_large"):
    tv(_n, "convnext", "core" if _n in ("convnext_tiny", "convnext_base") else "all")
for _n in ("shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "shufflenet_v2_x1_5", "shufflenet_v2_x2_0"):
    tv(_n, "shufflenet", "core" if _n == "shufflenet_v2_x1_0" else "all")
tv("squeezenet1_0", "squeezenet")
tv("squeezenet1_1", "squeezenet", "core")
for _n in ("mnasnet0_5", "mnasnet0_75", "mnasnet1_0", "mnasnet1_3"):
    tv(_n, "mnasnet", "core" if _n == "mnasnet1_0" else "all")
tv("googlenet", "googlenet", "core")
tv("inception_v3", "inception", "core", res=299)
for _n in ("vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32", "vit_h_14"):
    tv(_n, "vit", "core" if _n in ("vit_b_16", "vit_l_16") else "all")
for _n in ("swin_t", "swin_s", "swin_b", "swin_v2_t", "swin_v2_s", "swin_v2_b"):
    tv(_n, "swin", "core" if _n in ("swin_t", "swin_v2_t") else "all")
tv("maxvit_t", "maxvit", "core")
# torchvision: segmentation (the "out" head; aux_loss off with weights=None)
tv_seg("fcn_resnet50", "fcn", "core")
tv_seg("fcn_resnet101", "fcn")
tv_seg("deeplabv3_resnet50", "deeplabv3", "core")
tv_seg("deeplabv3_resnet101", "deeplabv3")
tv_seg("deeplabv3_mobilenet_v3_large", "deeplabv3", "core")
tv_seg("lraspp_mobilenet_v3_large", "lraspp", "core")
# torchvision: video
for _n in ("r3d_18", "mc3_18", "r2plus1d_18"):
    tv_video(_n, "video_resnet", "core")
for _n, _f in (("s3d", "s3d"), ("mvit_v1_b", "mvit"), ("mvit_v2_s", "mvit"), ("swin3d_t", "swin3d"),
               ("swin3d_s", "swin3d"), ("swin3d_b", "swin3d")):
    # s3d's and mvit's pooling and positions fix 16 x 224 x 224
    tv_video(_n, _f, "all", shape=(2, 3, 16, 224, 224), small=(1, 3, 16, 224, 224))

# transformers: encoders
_NOCACHE = {"use_cache": False}
hf_text("bert-base", "bert", "encoder", "BertConfig", {}, "num_hidden_layers", 30522)
hf_text("bert-large", "bert", "encoder", "BertConfig",
        {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096},
        "num_hidden_layers", 30522, tier="all")
hf_text("roberta-base", "roberta", "encoder", "RobertaConfig",
        {"max_position_embeddings": 514, "type_vocab_size": 1, "pad_token_id": 1, "bos_token_id": 0,
         "eos_token_id": 2, "layer_norm_eps": 1e-5}, "num_hidden_layers", 50265)
hf_text("distilbert-base", "distilbert", "encoder", "DistilBertConfig", {}, "n_layers", 30522)
hf_text("t5-base-encoder", "t5", "encoder", "T5Config",
        {"d_model": 768, "d_kv": 64, "d_ff": 3072, "num_layers": 12, "num_heads": 12,
         "feed_forward_proj": "relu"}, "num_layers", 32128, model_class="T5EncoderModel")
# transformers: decoders (base models: hidden states, no LM head; no KV cache)
hf_text("gpt2", "gpt2", "decoder", "GPT2Config", {}, "n_layer", 50257, call_kw=_NOCACHE)
hf_text("gpt2-medium", "gpt2", "decoder", "GPT2Config", {"n_embd": 1024, "n_layer": 24, "n_head": 16},
        "n_layer", 50257, tier="all", call_kw=_NOCACHE)
hf_text("llama-1b", "llama", "decoder", "LlamaConfig",  # Llama 3.2 1B's sizes: GQA 32/8, llama3 RoPE
        {"hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16, "num_attention_heads": 32,
         "num_key_value_heads": 8, "head_dim": 64, "max_position_embeddings": 131072, "rms_norm_eps": 1e-5,
         "tie_word_embeddings": True,
         "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "low_freq_factor": 1.0,
                             "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}},
        "num_hidden_layers", 128256, call_kw=_NOCACHE)
hf_text("mistral-1b", "mistral", "decoder", "MistralConfig",  # Mistral's shape scaled: GQA 16/4, head 128
        {"hidden_size": 2048, "intermediate_size": 7168, "num_hidden_layers": 12, "num_attention_heads": 16,
         "num_key_value_heads": 4, "head_dim": 128, "max_position_embeddings": 32768, "sliding_window": None,
         "rope_theta": 1000000.0}, "num_hidden_layers", 32768, call_kw=_NOCACHE)
hf_text("qwen2-0.5b", "qwen2", "decoder", "Qwen2Config",  # Qwen2.5 0.5B's sizes: GQA 14/2, QKV bias
        {"hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14,
         "num_key_value_heads": 2, "max_position_embeddings": 32768, "rope_theta": 1000000.0,
         "tie_word_embeddings": True, "use_sliding_window": False, "rms_norm_eps": 1e-6},
        "num_hidden_layers", 151936, call_kw=_NOCACHE)
hf_text("gptj-0.4b", "gptj", "decoder", "GPTJConfig",  # GPT-J's block scaled: parallel attn/MLP, partial
        {"n_embd": 1024, "n_layer": 12, "n_head": 16, "rotary_dim": 32,  # interleaved rotary (repeat_interleave)
         "n_positions": 2048}, "n_layer", 50400, tier="all", call_kw=_NOCACHE)
# transformers: vision
hf("vit-base-hf", "vit_hf", "vision", "ViTConfig", {},
   [{"name": "pixel_values", "shape": [32, 3, 224, 224], "kind": "float"}],
   [{"name": "pixel_values", "shape": [2, 3, 224, 224], "kind": "float"}], {"num_hidden_layers": 2})
hf("clip-vit-b16-vision", "clip", "vision", "CLIPVisionConfig",
   {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
    "image_size": 224, "patch_size": 16, "hidden_act": "quick_gelu"},
   [{"name": "pixel_values", "shape": [32, 3, 224, 224], "kind": "float"}],
   [{"name": "pixel_values", "shape": [2, 3, 224, 224], "kind": "float"}], {"num_hidden_layers": 2},
   model_class="CLIPVisionModel")
# transformers: audio
hf("whisper-small-encoder", "whisper", "audio", "WhisperConfig",
   {"d_model": 768, "encoder_layers": 12, "encoder_attention_heads": 12, "encoder_ffn_dim": 3072,
    "decoder_layers": 12, "decoder_attention_heads": 12, "decoder_ffn_dim": 3072, "num_mel_bins": 80,
    "max_source_positions": 1500},
   [{"name": "input_features", "shape": [8, 80, 3000], "kind": "float"}],
   [{"name": "input_features", "shape": [2, 80, 3000], "kind": "float"}], {"encoder_layers": 2},
   model_class="transformers.models.whisper.modeling_whisper.WhisperEncoder")
hf("wav2vec2-base", "wav2vec2", "audio", "Wav2Vec2Config", {},
   [{"name": "input_values", "shape": [8, 160000], "kind": "float"}],
   [{"name": "input_values", "shape": [2, 32000], "kind": "float"}], {"num_hidden_layers": 2})

GROUPS = ("classification", "segmentation", "video", "encoder", "decoder", "vision", "audio")


def zoo_models():
    """the zoo, checked: unique names, both sizes, known groups"""
    names = [m["name"] for m in ZOO]
    if len(set(names)) != len(names):
        raise SystemExit(f"zoo: duplicate model names: {sorted({n for n in names if names.count(n) > 1})}")
    return list(ZOO)


def unit_id(name, dtype):
    return f"{name}/{dtype}"


def file_id(uid):
    return uid.replace("/", "_")


def parse_dtypes(text):
    ds = [d.strip() for d in (text or "").split(",") if d.strip()]
    bad = [d for d in ds if d not in DTYPES]
    if bad or not ds:
        raise SystemExit(f"zoo: --dtype takes some of {','.join(DTYPES)} (got {text!r})")
    return list(dict.fromkeys(ds))


def _names(opt, text, models, dtypes):
    """the (model, dtype) pairs named by a --only/--skip list: model names,
    fnmatch patterns, or MODEL/DTYPE; a pattern that matches nothing is an
    error"""
    out = set()
    for x in (text or "").split(","):
        x = x.strip()
        if not x:
            continue
        pat, dts = x, dtypes
        if "/" in x:
            pat, dt = x.rsplit("/", 1)
            if dt not in DTYPES:
                raise SystemExit(f"zoo: {opt}: {x!r}: {dt!r} is not one of {','.join(DTYPES)}")
            dts = [dt]
        hit = [m["name"] for m in models if fnmatch.fnmatchcase(m["name"], pat)]
        if not hit:
            raise SystemExit(f"zoo: {opt}: no model matches {pat!r} (--list shows them)")
        out |= {(n, d) for n in hit for d in dts}
    return out


def select(models, args):
    """the units (model x dtype) the options pick, in zoo order (model by
    model, the dtypes of each in --dtype's order), then this shard's part"""
    dtypes = parse_dtypes(args.dtype)
    sel = list(models)
    tier = getattr(args, "tier", "all") or "all"
    if tier not in ("core", "all"):
        raise SystemExit(f"zoo: --tier is core or all (got {tier!r})")
    if tier == "core":
        sel = [m for m in sel if m["tier"] == "core"]
    if args.family:
        fams = {f.strip() for f in args.family.split(",") if f.strip()}
        known = {m["family"] for m in models} | {m["group"] for m in models}
        bad = sorted(fams - known)
        if bad:
            raise SystemExit(f"zoo: --family: unknown {', '.join(bad)} (families: "
                             f"{', '.join(sorted({m['family'] for m in models}))}; groups: {', '.join(GROUPS)})")
        sel = [m for m in sel if m["family"] in fams or m["group"] in fams]
    units = [{"id": unit_id(m["name"], d), "model": m["name"], "dtype": d, "family": m["family"],
              "group": m["group"], "src": m["src"], "tier": m["tier"]} for m in sel for d in dtypes]
    if args.only:
        only = _names("--only", args.only, models, DTYPES)
        units = [u for u in units if (u["model"], u["dtype"]) in only]
    if args.skip:
        skip = _names("--skip", args.skip, models, DTYPES)
        units = [u for u in units if (u["model"], u["dtype"]) not in skip]
    prio = getattr(args, "priority", "") or ""
    if prio:
        # the models --priority names first, in its order (each pattern's
        # matches in zoo order), the rest after them in zoo order
        rank = {}
        for i, x in enumerate(p.strip() for p in prio.split(",")):
            if not x:
                continue
            hit = [m["name"] for m in models if fnmatch.fnmatchcase(m["name"], x)]
            if not hit:
                raise SystemExit(f"zoo: --priority: no model matches {x!r} (--list shows them)")
            for n in hit:
                rank.setdefault(n, i)
        units = sorted(units, key=lambda u: rank.get(u["model"], 1 << 30))  # stable: zoo order within
    done = getattr(args, "done", "") or ""
    if done:
        # units an earlier run (another machine, another shard count) already
        # recorded: left out before the shards are cut, so that the shards
        # share what is left
        recs = []
        for path in (p.strip() for p in done.split(",")):
            if path and not os.path.exists(path):
                raise SystemExit(f"zoo: --done: {path} does not exist")
            if path:
                recs += kb.read_jsonl(path)
        seen = latest(recs, getattr(args, "done_mode", None) or ("cpu-check" if getattr(args, "cpu_check", False)
                                                                   else "gpu"))
        again = {s.strip() for s in (getattr(args, "redo_status", "") or "").split(",") if s.strip()}
        units = [u for u in units if u["id"] not in seen or seen[u["id"]].get("status") in again]
    if args.shard:
        m = re.match(r"^(\d+)/(\d+)$", args.shard)
        if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
            raise SystemExit(f"zoo: --shard takes K/N with 1 <= K <= N (got {args.shard!r})")
        k, n = int(m.group(1)), int(m.group(2))
        if getattr(args, "shard_costs", None):
            part = kb.lpt_shards(units, shard_costs(args.shard_costs), n)
            units = [u for i, u in enumerate(units) if part[i] == k - 1]
        else:
            units = [u for i, u in enumerate(units) if i % n == k - 1]
    return units


def shard_costs(path):
    """unit id -> seconds its last record in an earlier results.jsonl took"""
    if not os.path.exists(path):
        raise SystemExit(f"zoo: --shard-costs: {path} does not exist")
    costs = {}
    for r in kb.read_jsonl(path):
        if r.get("type") == "model" and _finite(r.get("wall_s")):
            costs[r["id"]] = float(r["wall_s"])
    if not costs:
        raise SystemExit(f"zoo: --shard-costs: {path} has no model records with wall_s")
    return costs


def model_spec(name):
    for m in ZOO:
        if m["name"] == name:
            return m
    raise KeyError(name)


def latest(records, mode=None):
    """each unit's last record (of mode, if given)"""
    last = {}
    for r in records:
        if r.get("type") == "model" and "id" in r and (mode is None or r.get("mode") == mode):
            last[r["id"]] = r
    return last


def pending(units, records, mode, redo=False, redo_status=""):
    """the units still to run: not recorded in this mode, or recorded with a
    status in redo_status (comma-separated); all with redo"""
    if redo:
        return list(units)
    again = {s.strip() for s in (redo_status or "").split(",") if s.strip()}
    bad = again - set(STATUSES)
    if bad:
        raise SystemExit(f"zoo: --redo-status: unknown status {', '.join(sorted(bad))} "
                         f"(statuses: {', '.join(STATUSES)})")
    done = latest(records, mode)
    return [u for u in units if u["id"] not in done or done[u["id"]].get("status") in again]


# ---- errors, grouped ----------------------------------------------------------------------

def kfuse_error_line(text):
    """kfuse's own `kfuse: error:` line of an error text, else its first
    error-looking line"""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    for line in lines:
        if "kfuse: error:" in line:
            return line[line.index("kfuse: error:"):][:300]
    return kb.first_line(text)


def error_key(text):
    """an error message with what varies between models taken out (numbers,
    shapes, node and value names), so that one cause groups as one"""
    line = kfuse_error_line(text)
    out, i = [], 0
    while True:  # IR types (tensor<2x512xbf16, #kf.strided<[...]>>) as one token
        k = line.find("tensor<", i)
        if k < 0:
            break
        depth, e = 0, k + len("tensor")
        while e < len(line):
            depth += {"<": 1, ">": -1}.get(line[e], 0)
            e += 1
            if depth == 0:
                break
        out.append(line[i:k] + "tensor<…>")
        i = e
    line = "".join(out) + line[i:]
    line = re.sub(r"^kfuse: error:\s*", "", line)
    line = re.sub(r"^<work>/\S+:\s*", "", line)
    line = re.sub(r"'[^']*'", "'…'", line)
    line = re.sub(r"%[\w.]+", "%…", line)
    line = re.sub(r"\[[-\d, x]*\]", "[…]", line)
    line = re.sub(r"\b\d+(\.\d+)?(e[-+]?\d+)?\b", "N", line)
    return line.strip()


# ---- summary (no torch) -------------------------------------------------------------------

gmean = kb.gmean
_f = kb._f
_pct = kb._pct
SLOW = 0.9  # units below this speedup against eager are listed


def dtype_summary(recs):
    n = len(recs)
    gpu = any(r.get("mode") == "gpu" for r in recs)
    ok = [r for r in recs if r.get("status") == "ok" and r.get("mode") == "gpu"]
    se = [r["speedup_eager"] for r in ok if _finite(r.get("speedup_eager"))]
    sc = [r["speedup_compile"] for r in ok if _finite(r.get("speedup_compile"))]
    comp = [r["compile_s"] for r in recs if _finite(r.get("compile_s"))]
    statuses = {}
    for r in recs:
        statuses[r.get("status", "?")] = statuses.get(r.get("status", "?"), 0) + 1
    return {"units": n, "exported": sum(1 for r in recs if r.get("exported")),
            "compiled": sum(1 for r in recs if r.get("compiled")), "correct": len(ok) if gpu else None,
            "fast_1_eager": (sum(1 for x in se if x > 1) / n) if n and gpu else None,
            "fast_1_compile": (sum(1 for x in sc if x > 1) / n) if n and gpu else None,
            "gmean_speedup_eager": gmean(se), "gmean_speedup_compile": gmean(sc),
            "speedup_eager_n": len(se), "speedup_compile_n": len(sc),
            "median_compile_s": statistics.median(comp) if comp else None, "statuses": statuses}


def summarize(records):
    runs = [r for r in records if r.get("type") == "run"]
    last = latest(records)
    order = {m["name"]: i for i, m in enumerate(ZOO)}
    recs = sorted(last.values(), key=lambda r: (order.get(r.get("model"), 1 << 30), r.get("model", ""),
                                                DTYPES.index(r["dtype"]) if r.get("dtype") in DTYPES else 9))
    dtypes = {}
    for d in DTYPES:
        sub = [r for r in recs if r.get("dtype") == d]
        if sub:
            dtypes[d] = dtype_summary(sub)
    if recs:
        dtypes["all"] = dtype_summary(recs)
    # fast_1 against eager per family and dtype (correct and faster, over the family's units)
    families = {}
    for r in recs:
        f = families.setdefault(r.get("family", "?"), {})
        c = f.setdefault(r.get("dtype", "?"), {"n": 0, "fast": 0, "fast_compile": 0, "correct": 0})
        c["n"] += 1
        if r.get("status") == "ok" and r.get("mode") == "gpu":
            c["correct"] += 1
            c["fast"] += 1 if (r.get("speedup_eager") or 0) > 1 else 0
            c["fast_compile"] += 1 if (r.get("speedup_compile") or 0) > 1 else 0
    degenerate = [{"id": r["id"], "status": r.get("status"), "why": r["degenerate"]} for r in recs
                  if r.get("degenerate")]
    slow = [r for r in recs if r.get("status") == "ok" and _finite(r.get("speedup_eager"))
            and r["speedup_eager"] < SLOW]
    fails = [r for r in recs if r.get("status") != "ok"]
    groups = {}
    for r in fails:
        key = (r.get("status"), error_key(r.get("error")))
        groups.setdefault(key, []).append(r)
    grouped = [{"status": k[0], "message": k[1], "count": len(v), "units": [r["id"] for r in v],
                "example": kfuse_error_line(v[0].get("error"))}
               for k, v in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))]
    return {"runs": runs, "dtypes": dtypes, "families": families,
            "below_eager": [{"id": r["id"], "speedup_eager": r["speedup_eager"],
                             "speedup_compile": r.get("speedup_compile")}
                            for r in sorted(slow, key=lambda r: r["speedup_eager"])],
            "failure_groups": grouped, "degenerate": degenerate,
            "shared_gpu": [r["id"] for r in recs if (r.get("gpu_processes") or 0) > 1],
            "units": recs}


def dtype_table(dtypes):
    L = ["| dtype | units | exported | compiled | correct | fast_1 vs eager | fast_1 vs compile "
         "| geomean vs eager (n) | geomean vs compile (n) | median cold compile s |",
         "|---|---|---|---|---|---|---|---|---|---|"]
    for name, s in dtypes.items():
        L.append(f"| {name} | {s['units']} | {s['exported']} | {s['compiled']} | "
                 f"{'—' if s['correct'] is None else s['correct']} | {_pct(s['fast_1_eager'])} | "
                 f"{_pct(s['fast_1_compile'])} | {_f(s['gmean_speedup_eager'], '{:.2f}x')} ({s['speedup_eager_n']}) | "
                 f"{_f(s['gmean_speedup_compile'], '{:.2f}x')} ({s['speedup_compile_n']}) | "
                 f"{_f(s['median_compile_s'], '{:.2f}')} |")
    return L


def _cell(text):
    return (text or "").replace("|", "\\|").replace("\n", " ")


def summary_md(summ):
    L = ["# Model zoo with kfuse", ""]
    for h in summ["runs"]:
        line = (f"- run {h.get('run_id')} ({h.get('mode')}, {h.get('started', '?')}): {h.get('device')}; "
                f"torch {h.get('torch')}, torchvision {h.get('torchvision')}, transformers {h.get('transformers')}; "
                f"{h.get('kfuse_version', 'kfuse ?')} (sha256 {str(h.get('kfuse_sha256', '?'))[:12]})")
        if h.get("compile_args"):
            line += f", compile args `{h['compile_args']}`"
        if h.get("small"):
            line += "; --small sizes"
        if h.get("command"):
            line += f"; command `{h['command']}`"
        L.append(line)
    gpu = any(r.get("mode") == "gpu" for r in summ["units"])
    L += [""] + dtype_table(summ["dtypes"]) + [""]
    if gpu:
        L.append("correct: kfuse's relative error norm against the model run in fp64 within "
                 "max(3x eager's, 1e-3 fp32 / 2e-2 fp16, bf16); fast_1: correct and faster, over all units; "
                 "geometric means over the correct units timed (n).")
        fams = summ["families"]
        ds = [d for d in DTYPES if any(d in v for v in fams.values())]
        L += ["", "## fast_1 against eager per family (correct and faster / units)", "",
              "| family | " + " | ".join(ds) + " |", "|---|" + "---|" * len(ds)]
        for fam, v in fams.items():
            L.append(f"| {fam} | " + " | ".join(
                f"{v[d]['fast']}/{v[d]['n']}" if d in v else "—" for d in ds) + " |")
        L += ["", f"## Below {SLOW}x eager", ""]
        if summ["below_eager"]:
            L += ["| unit | vs eager | vs compile |", "|---|---|---|"]
            for r in summ["below_eager"]:
                L.append(f"| {r['id']} | {_f(r['speedup_eager'], '{:.2f}x')} | "
                         f"{_f(r['speedup_compile'], '{:.2f}x')} |")
        else:
            L.append("none")
        if summ.get("degenerate"):
            L += ["", "## Checks that check little (counted by their verdict, listed here)", "",
                  "| unit | status | why |", "|---|---|---|"]
            for d in summ["degenerate"]:
                L.append(f"| {d['id']} | {d['status']} | {_cell(d['why'])} |")
        if summ["shared_gpu"]:
            L += ["", f"**Timed beside other processes on the same GPU** ({len(summ['shared_gpu'])}; their times "
                  "are suspect): " + ", ".join(summ["shared_gpu"])]
    L += ["", "Statuses: " + "; ".join(f"{k} " + ", ".join(f"{s} {n}" for s, n in sorted(v["statuses"].items()))
                                       for k, v in summ["dtypes"].items() if k != "all")]
    if summ["failure_groups"]:
        L += ["", "## Failures grouped by message", "", "| status | count | message | units |", "|---|---|---|---|"]
        for g in summ["failure_groups"]:
            L.append(f"| {g['status']} | {g['count']} | {_cell(g['example'])} | {', '.join(g['units'])} |")
    if gpu:
        L += ["", "## Every unit", "",
              "| family | model | dtype | status | compiled | eager vs fp64 | kfuse vs fp64 | kfuse vs eager | tol "
              "| eager ms | compile ms | kfuse ms | vs eager | vs compile | compile s | check s (share) "
              "| check error / bound | fallback |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in summ["units"]:
            mc = r.get("module_check") or {}
            cs, tot = r.get("module_check_s"), r.get("compile_total_s")
            share = f"{_f(cs, '{:.1f}')} ({100 * cs / tot:.0f} %)" if _finite(cs) and _finite(tot) and tot > 0 \
                else _f(cs, '{:.1f}')
            L.append(f"| {r.get('family')} | {r.get('model')} | {r.get('dtype')} | {r.get('status')} | "
                     f"{'yes' if r.get('compiled') else 'no'} | {_f(r.get('eager_vs_fp64'), '{:.1e}')} | "
                     f"{_f(r.get('kfuse_vs_fp64'), '{:.1e}')} | {_f(r.get('kfuse_vs_eager'), '{:.1e}')} | "
                     f"{_f(r.get('tol'), '{:.0e}')} | {_f(r.get('eager_ms'))} | {_f(r.get('compile_ms'))} | "
                     f"{_f(r.get('kfuse_ms'))} | {_f(r.get('speedup_eager'), '{:.2f}x')} | "
                     f"{_f(r.get('speedup_compile'), '{:.2f}x')} | {_f(r.get('compile_s'), '{:.1f}')} | {share} | "
                     f"{_f(mc.get('max_rel_err'), '{:.1e}')} / {_f(mc.get('bound'), '{:.1e}')} | "
                     f"{_cell(mc.get('fallback') or '')} |")
    else:
        L += ["", "## Every unit (export and compile only)", "",
              "| family | model | dtype | status | export s | compile s | groups | kfuse message |",
              "|---|---|---|---|---|---|---|---|"]
        for r in summ["units"]:
            msg = kfuse_error_line(r.get("error")) if r.get("status") != "ok" else ""
            L.append(f"| {r.get('family')} | {r.get('model')} | {r.get('dtype')} | {r.get('status')} | "
                     f"{_f(r.get('export_s'), '{:.1f}')} | {_f(r.get('compile_s'), '{:.1f}')} | "
                     f"{r.get('groups', '—')} | {_cell(msg)} |")
    return "\n".join(L) + "\n"


def write_summary(out, quiet=False):
    summ = summarize(kb.read_jsonl(os.path.join(out, "results.jsonl")))
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({k: v for k, v in summ.items() if k != "units"}, f, indent=1)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(summary_md(summ))
    kb.bundle_reports(out)
    if not quiet:
        print("\n".join(dtype_table(summ["dtypes"])), flush=True)
    return summ


# ---- the orchestrator (no torch) ----------------------------------------------------------

FORK_PRELOAD = ["__main__", "torch", "torch._dynamo", "torch._inductor.compile_fx", "torch.export",
                "torch._subclasses.fake_tensor", "torchvision", "transformers"]
FORK_PRELOAD_CPU = ["__main__", "torch", "torch.export", "torch._subclasses.fake_tensor", "torchvision",
                    "transformers"]


class Runner:
    def __init__(self, args, mode):
        self.args, self.mode = args, mode
        self.out = os.path.abspath(args.out)
        os.makedirs(self.out, exist_ok=True)
        self.results = os.path.join(self.out, "results.jsonl")
        self.work = os.path.abspath(args.work) if args.work else tempfile.mkdtemp(prefix="kfuse-zoo-")
        os.makedirs(self.work, exist_ok=True)
        self.t0 = time.monotonic()
        self.deadline = self.t0 + args.deadline if args.deadline else None
        os.environ["PYTHONUNBUFFERED"] = "1"
        os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"  # see kernelbench.py: keeps fork usable
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        if args.inductor_cache:
            d = os.path.abspath(args.inductor_cache)
            os.makedirs(d, exist_ok=True)
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = d
            os.environ["TRITON_CACHE_DIR"] = os.path.join(d, "triton")
        self.ctx = None
        if not args.no_fork_server:
            import multiprocessing
            self.ctx = multiprocessing.get_context("forkserver")
            self.ctx.set_forkserver_preload(FORK_PRELOAD_CPU if mode == "cpu-check" else FORK_PRELOAD)
        self.run_id = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        self.report_ok = True
        self.modes = []

    def left(self):
        return None if self.deadline is None else self.deadline - time.monotonic()

    def elapsed(self):
        return time.monotonic() - self.t0

    def job(self, kind, unit=None, **extra):
        a = self.args
        d = os.path.join(self.work, file_id(unit["id"]) if unit else "_run")
        os.makedirs(d, exist_ok=True)
        j = {"kind": kind, "dir": d, "result": os.path.join(d, f"{kind}.result.json"),
             "kfuse": os.path.abspath(a.kfuse) if a.kfuse else None,
             "compile_args": shlex.split(a.compile_args or ""), "report": self.report_ok,
             "compile_timeout": a.compile_timeout, "seed": a.seed, "python_dir": os.path.join(HERE, "..", "python"),
             "modes": self.modes, "budget": a.budget, "min_runs": a.min_runs, "max_runs": a.max_runs,
             "time_failed": a.time_failed, "keep_work": a.keep_work, "small": a.small, "fp64": not a.no_fp64,
             "l2_flush": not a.no_l2_flush}
        if unit:
            j["unit"] = dict(unit)
            j["spec"] = model_spec(unit["model"])
        j.update(extra)
        return j

    def run_job(self, j, timeout):
        """one worker on job j with a wall-clock limit: (result or None,
        exit code or None, timed out, log path); as kernelbench.py's"""
        jp = os.path.join(j["dir"], f"{j['kind']}.job.json")
        with open(jp, "w") as f:
            json.dump(j, f)
        if os.path.exists(j["result"]):
            os.remove(j["result"])
        log = os.path.join(j["dir"], f"{j['kind']}.log")
        timeout = max(1.0, timeout)
        if self.ctx is not None:
            p = self.ctx.Process(target=fork_child, args=(jp, log))
            p.start()
            p.join(timeout)
            timed_out = p.is_alive()
            if timed_out:
                kb.kill_group(p.pid, p.kill)
                p.join()
            rc = None if timed_out else p.exitcode
        else:
            with open(log, "w") as lf:
                p = subprocess.Popen([sys.executable, THIS, "--worker", jp], stdout=lf, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
                try:
                    rc, timed_out = p.wait(timeout=timeout), False
                except subprocess.TimeoutExpired:
                    kb.kill_group(p.pid, p.kill)
                    p.wait()
                    rc, timed_out = None, True
        kb.kill_group(p.pid, None)
        res = None
        if os.path.exists(j["result"]):
            try:
                with open(j["result"]) as f:
                    res = json.load(f)
            except ValueError:
                res = None
        return res, rc, timed_out, log

    def kfuse_info(self):
        a = self.args
        if not a.kfuse:
            raise SystemExit("zoo: --kfuse PATH (the kfuse binary) is needed")
        k = os.path.abspath(a.kfuse)
        if not os.access(k, os.X_OK):
            raise SystemExit(f"zoo: --kfuse {a.kfuse}: not an executable file")
        r = subprocess.run([k, "version"], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise SystemExit(f"zoo: `kfuse version` failed ({r.returncode}): {kb.first_line(r.stderr or r.stdout)}")
        h = subprocess.run([k, "help"], capture_output=True, text=True, timeout=60)
        self.report_ok = "--report" in (h.stdout + h.stderr)
        import hashlib
        with open(k, "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()
        self.kfuse_version, self.kfuse_sha = kb.first_line(r.stdout), sha

    def header(self, probe):
        a = self.args
        h = {"type": "run", "run_id": self.run_id, "mode": self.mode,
             "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
             "kfuse_version": self.kfuse_version, "kfuse_sha256": self.kfuse_sha,
             "compile_args": a.compile_args or "", "small": bool(a.small),
             "command": " ".join(shlex.quote(x) for x in ["scripts/zoo.py"] + sys.argv[1:]),
             "selection": {"tier": a.tier, "family": a.family, "only": a.only, "skip": a.skip, "shard": a.shard,
                           "dtype": a.dtype},
             "options": {"timeout": a.timeout, "compile_timeout": a.compile_timeout, "seed": a.seed}}
        if self.mode == "gpu":
            h["options"].update(budget=a.budget, min_runs=a.min_runs, max_runs=a.max_runs, modes=self.modes,
                                warm_jobs=a.warm_jobs, warm_export=a.warm_export, fp64=not a.no_fp64,
                                l2_flush=not a.no_l2_flush)
        h.update(probe)
        return h

    def finish_record(self, u, res, rc, timed_out, log, timeout):
        rec = dict(res or {})
        rec.pop("final", None)
        rec.update(type="model", id=u["id"], model=u["model"], dtype=u["dtype"], family=u["family"],
                   group=u["group"], tier=u["tier"], mode=self.mode, small=bool(self.args.small),
                   run_id=self.run_id)
        for k in ("device", "torch"):
            rec.setdefault(k, self.probe.get(k))
        final = bool(res and res.get("final"))
        if timed_out:
            rec["status"] = "timeout"
            rec["error"] = f"timed out after {timeout:.0f} s in stage {rec.get('stage', 'start')}"
        elif not final:
            sig = ""
            if rc is not None and rc < 0:
                try:
                    sig = f" ({signal.Signals(-rc).name}{', out of memory?' if -rc == signal.SIGKILL else ''})"
                except ValueError:
                    pass
            tail = kb.log_tail(log, 12)
            rec["status"] = "crash"
            rec["error"] = (f"worker exited with code {rc}{sig} in stage {rec.get('stage', 'start')}"
                            + (f"\n{kb.last_error_line(tail)}" if tail else ""))
        elif rc != 0:
            rec.setdefault("note", f"worker exited with code {rc} after writing its result")
        if not rec.get("status"):
            rec["status"] = "crash"
            rec["error"] = f"the worker finished without a status (stage {rec.get('stage', 'start')}; exit {rc})"
        if rec.get("error"):
            for a, b in ((os.path.dirname(log), "<work>"), (self.work, "<work>")):
                rec["error"] = rec["error"].replace(a, b)
        if rec.get("status") != "ok":
            os.makedirs(os.path.join(self.out, "logs"), exist_ok=True)
            try:
                with open(os.path.join(self.out, "logs", f"{file_id(u['id'])}.{self.mode}.log"), "w") as f:
                    f.write(kb.log_tail(log, 200))
            except OSError:
                pass
        rep = os.path.join(os.path.dirname(log), "kfuse.report.json")
        if os.path.exists(rep):
            os.makedirs(os.path.join(self.out, "reports"), exist_ok=True)
            shutil.copyfile(rep, os.path.join(self.out, "reports", f"{file_id(u['id'])}.report.json"))
        return rec

    def probe_job(self):
        res, rc, to, log = self.run_job(self.job("probe"), 600)
        if self.ctx is not None and "forked subprocess" in ((res or {}).get("error") or "") + kb.log_tail(log, 30):
            print("zoo: CUDA refuses to start in a forked worker here; one fresh process per unit instead",
                  flush=True)
            self.ctx = None
            res, rc, to, log = self.run_job(self.job("probe"), 600)
        if not res or not res.get("final") or res.get("error"):
            raise SystemExit(f"zoo: the probe worker failed:\n{(res or {}).get('error') or kb.log_tail(log, 20)}")
        return res


def fork_child(job_path, log_path):
    """a worker forked by the fork server: its own session, output to its log"""
    os.setsid()
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout.reconfigure(line_buffering=True)
    sys.stderr.reconfigure(line_buffering=True)
    sys.exit(worker_main(job_path))


def progress(i, n, rec, elapsed):
    s = rec.get("status")
    parts = [f"[{i}/{n}] {rec['id']}: {s}"]
    if s == "ok" and rec.get("kfuse_ms"):
        parts.append(f"eager {_f(rec.get('eager_ms'))} compile {_f(rec.get('compile_ms'))} "
                     f"kfuse {_f(rec.get('kfuse_ms'))} ms ({_f(rec.get('speedup_eager'), '{:.2f}x')} eager, "
                     f"{_f(rec.get('speedup_compile'), '{:.2f}x')} compile)")
    if rec.get("kfuse_vs_fp64") is not None or rec.get("kfuse_vs_eager") is not None:
        parts.append(f"err fp64 eager {_f(rec.get('eager_vs_fp64'), '{:.1e}')} kfuse "
                     f"{_f(rec.get('kfuse_vs_fp64'), '{:.1e}')}")
    if s != "ok":
        parts.append(kfuse_error_line(rec.get("error")))
    if rec.get("compile_s") is not None:
        parts.append(f"kfuse compile {rec['compile_s']:.1f} s")
    parts.append(f"[{elapsed:.0f} s]")
    print("  ".join(parts), flush=True)


def run_units(r, todo, kind, jobs, extra=None):
    """each unit's worker, jobs at a time, records appended as they end;
    returns whether the deadline stopped it"""
    args = r.args
    count = [0]
    stop = threading.Event()

    def one(u):
        if stop.is_set():
            return
        left = r.left()
        if left is not None and left < 10:
            stop.set()
            return
        t = args.timeout if left is None else min(args.timeout, left)
        res, rc, timed_out, log = r.run_job(r.job(kind, u, **(extra or {})), t)
        if timed_out and t < args.timeout:
            stop.set()
            print(f"{u['id']}: stopped at the deadline; not recorded (it runs again on resume)", flush=True)
            return
        rec = r.finish_record(u, res, rc, timed_out, log, t)
        kb.append_jsonl(r.results, rec)
        with kb._write_lock:
            count[0] += 1
            progress(count[0], len(todo), rec, r.elapsed())
        if not args.keep_work:
            shutil.rmtree(os.path.join(r.work, file_id(u["id"])), ignore_errors=True)
        if kind == "model":
            write_summary(r.out, quiet=True)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        list(ex.map(one, todo))
    return stop.is_set()


def cpu_check(args, units):
    r = Runner(args, "cpu-check")
    r.kfuse_info()
    todo = pending(units, kb.read_jsonl(r.results), "cpu-check", args.redo, args.redo_status)
    print(f"zoo --cpu-check: {len(units)} selected, {len(todo)} to do, {args.jobs} at a time; work in {r.work}",
          flush=True)
    if todo:
        res = r.probe_job()
        r.probe = {"device": "cpu (export and kfuse compile only)", **{k: res.get(k) for k in
                                                                       ("torch", "torchvision", "transformers")}}
        kb.append_jsonl(r.results, r.header(r.probe))
        if run_units(r, todo, "cpu-check", args.jobs):
            print("zoo: deadline reached; rerun with the same --out to go on", flush=True)
    write_summary(r.out)
    if not args.work and not args.keep_work:
        shutil.rmtree(r.work, ignore_errors=True)
    return 0


def warm_phase(r, todo):
    """--warm-jobs N workers run each unit's torch.compile modes once, filling
    Inductor's on-disk caches for the timing phase; with --warm-export they
    also export it (CPU work) into its work folder (kfuse.warm.json), which
    the timing phase then compiles, until the kept exports reach
    --warm-export-max-gb (the rest are exported when timed); warm.jsonl
    remembers"""
    args = r.args
    wpath = os.path.join(r.out, "warm.jsonl")
    warm_ok = {w["id"] for w in kb.read_jsonl(wpath) if w.get("ok") and w.get("modes") == r.modes}
    export = bool(args.warm_export)

    def exported_there(u):
        return os.path.exists(os.path.join(r.work, file_id(u["id"]), "kfuse.warm.json"))
    todo = [u for u in todo if u["id"] not in warm_ok or (export and not exported_there(u))]
    if not todo or not (r.modes or export):
        return
    print(f"warm phase: {len(todo)} units, {args.warm_jobs} at a time (torch.compile {', '.join(r.modes) or '—'}"
          + ("; kfuse.export" if export else "") + ")", flush=True)
    t0 = time.monotonic()
    n = [0]
    kept = [0]

    def one(u):
        left = r.left()
        if left is not None and left < 60:
            return
        t = args.timeout if left is None else min(args.timeout, left)
        exp = export and kept[0] < args.warm_export_max_gb * 1e9 and not exported_there(u)
        res, rc, timed_out, log = r.run_job(r.job("warm", u, warm_export=exp), t)
        ok = bool(res and res.get("final") and not res.get("error"))
        if exp and res and res.get("pt2_bytes") and res.get("exported"):
            with kb._write_lock:
                kept[0] += res["pt2_bytes"]
        w = {"id": u["id"], "ok": ok, "modes": r.modes, "seconds": round(time.monotonic() - t0, 1),
             "run_id": r.run_id, "exported": bool(res and res.get("exported")) if exp else None}
        if not ok:
            w["error"] = (res or {}).get("error") or (
                "timed out" if timed_out else f"exit {rc}: {kb.last_error_line(kb.log_tail(log, 12))}")
        kb.append_jsonl(wpath, w)
        with kb._write_lock:
            n[0] += 1
            print(f"  warm [{n[0]}/{len(todo)}] {u['id']}: " + ("ok" if ok else f"FAILED {kb.first_line(w['error'])}")
                  + f" [{time.monotonic() - t0:.0f} s]", flush=True)

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.warm_jobs) as ex:
        list(ex.map(one, todo))
    print(f"warm phase: {time.monotonic() - t0:.0f} s", flush=True)


def gpu_run(args, units):
    r = Runner(args, "gpu")
    r.modes = [] if args.no_compile else list(dict.fromkeys(
        ["default"] + [m for m in (args.modes or "").split(",") if m.strip()]))
    r.kfuse_info()
    todo = pending(units, kb.read_jsonl(r.results), "gpu", args.redo, args.redo_status)
    print(f"zoo: {len(units)} selected, {len(todo)} to do; work in {r.work}", flush=True)
    if todo:
        res = r.probe_job()
        if not res.get("cuda_available"):
            if not args.work:
                shutil.rmtree(r.work, ignore_errors=True)
            raise SystemExit("zoo: no CUDA device visible to PyTorch (for a CPU machine: --cpu-check)")
        r.probe = {k: res.get(k) for k in ("device", "torch", "torchvision", "transformers", "cuda", "cudnn",
                                           "memory_bytes", "l2_bytes", "sm_count")}
        kb.append_jsonl(r.results, r.header(r.probe))
        print(f"device: {res.get('device')}; torch {res.get('torch')}", flush=True)
        # warm a chunk (--warm-chunk units, --warm-jobs at a time), then time
        # it, then the next: a deadline shorter than the whole warm phase
        # still leaves timed units behind (0: warm everything first)
        # time (--deadline): a chunk no larger than what the time left can
        # still time, from this run's seconds a unit and a warm phase so far
        chunk = len(todo) if args.warm_jobs <= 0 or args.warm_chunk <= 0 else args.warm_chunk
        c, unit_s, warm_s = 0, [], []
        while c < len(todo):
            n = chunk
            left = r.left()
            if left is not None and chunk < len(todo):
                per = statistics.mean(unit_s) if unit_s else 60.0
                n = max(1, min(chunk, int((left - (max(warm_s) if warm_s else 60.0)) / per)))
            part = todo[c:c + n]
            c += n
            t0 = time.monotonic()
            if args.warm_jobs > 0:
                warm_phase(r, part)
                warm_s.append(time.monotonic() - t0)
            t1 = time.monotonic()
            stopped = run_units(r, part, "model", 1)
            if not stopped:
                unit_s.append((time.monotonic() - t1) / len(part))
            else:
                print("zoo: deadline reached; rerun with the same --out to go on", flush=True)
                break
    summ = write_summary(r.out)
    if summ["below_eager"]:
        print(f"below {SLOW}x eager: " + ", ".join(f"{x['id']} {x['speedup_eager']:.2f}x"
                                                   for x in summ["below_eager"]), flush=True)
    if not args.work and not args.keep_work:
        shutil.rmtree(r.work, ignore_errors=True)
    return 0


# ---- the worker (torch) -------------------------------------------------------------------

TORCH_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def _tdtype(torch, d):
    return getattr(torch, TORCH_DTYPES[d])


def _import_attr(path):
    """a dotted attribute path: transformers.X or a module path"""
    import importlib
    mod, _, attr = path.rpartition(".")
    return getattr(importlib.import_module(mod), attr)


def build_module(torch, spec, small, dtype, seed):
    """the model of spec, seeded, in dtype, eval mode, wrapped so that it
    takes its inputs as positional tensors and returns a tuple of tensors;
    (module, notes)"""
    size = spec["small" if small else "full"]
    notes = []
    torch.manual_seed(seed)
    if spec["src"] == "tv":
        ctor = _import_attr(f"torchvision.{spec['module']}.{spec['ctor']}")
        inner = ctor(weights=None, **size["kw"])
        out_key = spec.get("out")
    else:
        import transformers
        cfg = getattr(transformers, spec["config_class"])(**size["config"])
        mc = spec["model_class"]
        cls = getattr(transformers, mc) if "." not in mc else _import_attr(mc)
        make = cls.from_config if mc.startswith("Auto") else cls._from_config
        try:
            inner = make(cfg, attn_implementation="sdpa")
        except (ValueError, TypeError, ImportError) as e:
            notes.append(f"sdpa refused ({kb.first_line(str(e))[:120]}); default attention")
            torch.manual_seed(seed)
            inner = make(cfg)
        out_key = None
    names = [i["name"] for i in size["inputs"]]
    call_kw = dict(spec.get("call_kw") or {})
    hf_model = spec["src"] == "hf"

    class Zoo(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *xs):
            if hf_model:
                out = self.m(**dict(zip(names, xs)), **call_kw, return_dict=True)
                return tuple(v for v in out.to_tuple() if isinstance(v, torch.Tensor))
            out = self.m(*xs)
            if out_key is not None:
                out = out[out_key]
            return out if isinstance(out, tuple) else (out,)

    if spec["src"] == "tv":
        notes += realistic_init(torch, inner, spec, seed)
    m = Zoo(inner).to(_tdtype(torch, dtype)).eval()
    return m, notes


def realistic_init(torch, inner, spec, seed):
    """torchvision's random initialisation made usable for a numerical
    check, in fp32 before the cast, deterministically (own generators):
      - weights initialised to all zeros (ViT's classification head) are
        drawn N(0, 0.02): an all-zero output checks nothing;
      - batch norms get running statistics from two forward passes in
        training mode on N(0, 1) inputs (the small size, batch >= 2),
        as a trained network has; with the default statistics (mean 0,
        variance 1) the activations of a random network shrink layer by
        layer (mobilenet_v3_large's logits are ~1e-10 in fp32, all zero
        in fp16: eager is then 100 % off and nothing is checked).
    Returns notes for the record."""
    notes = []
    g = torch.Generator().manual_seed(seed + 7)
    zeroed = []
    with torch.no_grad():
        for name, p in inner.named_parameters():
            if p.dim() >= 2 and p.numel() and not bool(p.any()):
                p.copy_(torch.randn(p.shape, generator=g) * 0.02)
                zeroed.append(name)
    if zeroed:
        notes.append("all-zero initial weights drawn N(0, 0.02): " + ", ".join(zeroed))
    bns = [b for b in inner.modules() if isinstance(b, torch.nn.modules.batchnorm._BatchNorm)]
    if bns:
        for b in bns:
            b.reset_running_stats()
            b.momentum = None  # a cumulative average over the passes
        inner.train()
        torch.manual_seed(seed + 8)  # dropout and stochastic depth in training mode
        # a fixed thread count: the same sums (so the same statistics) in
        # every process, and no oversubscription with warm workers side by side
        threads = torch.get_num_threads()
        torch.set_num_threads(4)
        try:
            with torch.no_grad():
                for _ in range(2):
                    xs = [torch.randn([max(2, i["shape"][0])] + list(i["shape"][1:]), generator=g)
                          for i in spec["small"]["inputs"]]
                    inner(*xs)
        finally:
            torch.set_num_threads(threads)
        inner.eval()
        notes.append(f"batch-norm statistics from 2 training-mode passes ({len(bns)} layers)")
    return notes


def input_tensors(torch, spec, small, dtype, seed, device, fake=False):
    """the model's inputs: token ids uniform in [0, high), floats N(0, 1)
    drawn in fp32 on device and cast; fake: shapes only (CPU FakeTensors)"""
    size = spec["small" if small else "full"]
    if fake:
        from torch._subclasses.fake_tensor import FakeTensorMode
        fm = FakeTensorMode(allow_non_fake_inputs=True)
        with fm:
            return [torch.empty(i["shape"], dtype=torch.int64 if i["kind"] == "tokens" else _tdtype(torch, dtype))
                    for i in size["inputs"]]
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    out = []
    for i in size["inputs"]:
        if i["kind"] == "tokens":
            out.append(torch.randint(0, i["high"], i["shape"], generator=g, device=device, dtype=torch.int64))
        else:
            out.append(torch.randn(i["shape"], generator=g, device=device, dtype=torch.float32)
                       .to(_tdtype(torch, dtype)))
    return out


def export_stage(w, torch):
    """build and kfuse.export on shape-only inputs (a real CPU draw where
    those will not export); returns the .pt2 or None (status set)"""
    import kfuse
    j = w.job
    spec, dtype = j["spec"], j["unit"]["dtype"]
    w.stage("build")
    t0 = time.perf_counter()
    try:
        m, notes = build_module(torch, spec, j["small"], dtype, j["seed"])
    except Exception as e:  # noqa: BLE001
        w.fail("build-fail", e, final=False)
        return None
    w.res["build_s"] = round(time.perf_counter() - t0, 2)
    if notes:
        w.res["build_notes"] = notes
    w.res["params"] = sum(p.numel() for p in m.parameters())
    w.res["param_bytes"] = kb.nbytes_of(torch, list(m.parameters()) + list(m.buffers()))
    w.stage("export")
    pt2 = os.path.join(j["dir"], "model.pt2")
    t0 = time.perf_counter()
    first = None
    for how in ("fake", "real"):
        try:
            args = input_tensors(torch, spec, j["small"], dtype, j["seed"] + 1, "cpu", fake=(how == "fake"))
            kfuse.export(m, args, pt2)
            w.res["export_inputs"] = how + (" (fake failed)" if first is not None else "")
            break
        except Exception as e:  # noqa: BLE001
            import traceback
            traceback.print_exception(e)
            if first is None:
                first = e
                print("-- export again: real inputs", flush=True)
                continue
            w.res.update(exported=False, export_s=round(time.perf_counter() - t0, 2), status="export-fail",
                         error=kb.error_lines(kb.scrub(w, f"{type(e).__name__}: {e}"), 8))
            w.res["export_error_fake"] = kb.error_lines(kb.scrub(w, f"{type(first).__name__}: {first}"), 3)
            return None
    w.res.update(exported=True, export_s=round(time.perf_counter() - t0, 2), pt2_bytes=os.path.getsize(pt2))
    return pt2


def compile_stage(w, pt2):
    w.stage("compile")
    so = kb.kfuse_compile(w, pt2)
    rep = os.path.join(w.job["dir"], "kfuse.report.json")
    if os.path.exists(rep):
        # the whole-module check (kfuse compile with a GPU): passed, error,
        # bound, the fallback taken, its seconds against the compile's
        try:
            with open(rep) as f:
                r = json.load(f)
            mc = r.get("module_check")
            if isinstance(mc, dict):
                w.res["module_check"] = {k: mc.get(k) for k in ("checked", "passed", "max_rel_err", "bound",
                                                                "policy_bound", "rounding_rel_err",
                                                                "repeat_max_diff", "seconds", "fallback",
                                                                "first_failure", "failure", "why")
                                         if mc.get(k) is not None}
            sec = r.get("seconds")
            if isinstance(sec, dict):
                w.res["module_check_s"] = sec.get("module_check")
                w.res["compile_total_s"] = sec.get("total")
        except (OSError, ValueError) as e:
            w.res.setdefault("report_error", f"{type(e).__name__}: {e}"[:300])
    if not w.job.get("keep_work"):
        os.remove(pt2)
    w.res["compiled"] = so is not None
    if so is None:
        w.res["status"] = "compile-fail"
        w.res["error"] = w.res.get("compile_error")
    return so


def _versions(w):
    import torch
    w.res["torch"] = torch.__version__
    for name in ("torchvision", "transformers"):
        try:
            w.res[name] = __import__(name).__version__
        except Exception as e:  # noqa: BLE001
            w.res[name] = f"unavailable ({type(e).__name__})"


def worker_probe(w):
    import torch
    _versions(w)
    w.res["cuda_available"] = torch.cuda.is_available()
    if w.res["cuda_available"]:
        try:
            kb._setup_torch(w.job)
            props = torch.cuda.get_device_properties(0)
            w.res.update(device=torch.cuda.get_device_name(), cuda=torch.version.cuda,
                         cudnn=torch.backends.cudnn.version(), l2_bytes=getattr(props, "L2_cache_size", None),
                         sm_count=props.multi_processor_count, memory_bytes=props.total_memory)
            torch.zeros(1, device="cuda").add_(1)
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            w.res["error"] = f"{type(e).__name__}: {e}"
    w.save(final=True)


def worker_cpu_check(w):
    w.stage("import")
    torch = kb._setup_torch(w.job)
    _versions(w)
    pt2 = export_stage(w, torch)
    if pt2 is not None and compile_stage(w, pt2) is not None:
        w.res["status"] = "ok"
        w.stage("done")
    w.save(final=True)


def rel_err(torch, got, ref):
    """||got - ref|| / ||ref|| over the elements where ref is finite, in
    float64, chunked; a non-finite got where ref is finite: inf; per output
    the largest. None when the output structures differ."""
    gl, rl = kb.leaves(torch, got), kb.leaves(torch, ref)
    if len(gl) != len(rl) or any(tuple(g.shape) != tuple(r.shape) for g, r in zip(gl, rl)):
        return None
    worst = 0.0
    for g, r in zip(gl, rl):
        g, r = g.reshape(-1), r.reshape(-1)
        if not r.is_floating_point():
            worst = max(worst, 0.0 if torch.equal(g.to(r.dtype), r) else float("inf"))
            continue
        sd = sr = 0.0
        step = 1 << 24
        for i in range(0, r.numel(), step):
            gd, rd = g[i:i + step].double(), r[i:i + step].double()
            fin = torch.isfinite(rd)
            if bool((fin & ~torch.isfinite(gd)).any()):
                sd = float("inf")
                break
            d = torch.where(fin, gd - rd, torch.zeros_like(rd))
            sd += float((d * d).sum().item())
            sr += float((torch.where(fin, rd, torch.zeros_like(rd)) ** 2).sum().item())
        worst = max(worst, math.sqrt(sd) / math.sqrt(sr) if sr > 0 else (0.0 if sd == 0 else float("inf")))
    return worst


def nonfinite(torch, out):
    return sum(int((~torch.isfinite(x)).sum().item()) for x in kb.leaves(torch, out) if x.is_floating_point())


def _clone(torch, xs):
    return [x.clone() for x in xs]


def worker_model(w):
    j = w.job
    u = j["unit"]
    spec, dtype = j["spec"], u["dtype"]
    w.stage("import")
    torch = kb._setup_torch(j)
    import kfuse
    _versions(w)
    w.res["device"] = torch.cuda.get_device_name()

    warm = os.path.join(j["dir"], "kfuse.warm.json")
    meta = None
    if os.path.exists(warm):
        with open(warm) as f:
            meta = json.load(f)
    if meta and ((meta.get("pt2") and os.path.exists(meta["pt2"])) or meta.get("status")):
        # exported (or failed to) by the warm phase
        w.res.update({k: meta[k] for k in WARM_KEYS if k in meta})
        w.res.update(export_in_warm_phase=True, stage=meta.get("stage", "export"))
        pt2 = meta.get("pt2") if not meta.get("status") else None
    else:
        pt2 = export_stage(w, torch)
    so = compile_stage(w, pt2) if pt2 is not None else None
    if so is None:
        failed_at = w.res["stage"]
        if w.res.get("status") == "build-fail" or not j.get("time_failed"):
            w.save(final=True)
            return
    import gc
    gc.collect()

    # eager: the same model again (same seed), fresh inputs on the GPU
    w.stage("eager")
    try:
        model = build_module(torch, spec, j["small"], dtype, j["seed"])[0].cuda()
        sets = [input_tensors(torch, spec, j["small"], dtype, j["seed"] + 2 + k, "cuda") for k in range(2)]
        with torch.no_grad():
            want = model(*_clone(torch, sets[0]))
            want_b = model(*_clone(torch, sets[0]))
            torch.cuda.synchronize()
        w.res["eager_self"] = rel_err(torch, want_b, want)
        w.res["eager_nonfinite"] = nonfinite(torch, want)
        w.res["outputs"] = [list(x.shape) for x in kb.leaves(torch, want)]
        del want_b
    except Exception as e:  # noqa: BLE001
        return w.fail("eager-fail", e)

    # float64: a copy of the (cast) model, the same inputs as float64
    ref = None
    if j.get("fp64"):
        w.stage("fp64")
        import copy
        try:
            m64 = copy.deepcopy(model).double()
            ins = [x.double() if x.is_floating_point() else x for x in sets[0]]
            with torch.no_grad():
                ref = m64(*ins)
            torch.cuda.synchronize()
            w.res["fp64_nonfinite"] = nonfinite(torch, ref)
            w.res["eager_vs_fp64"] = rel_err(torch, want, ref)
        except Exception as e:  # noqa: BLE001
            ref = None
            w.res["fp64_error"] = f"{type(e).__name__}: {kb.first_line(str(e))}"
        m64 = ins = None
        gc.collect()
        torch.cuda.empty_cache()
    else:
        w.res["fp64_error"] = "--no-fp64"
    # a check that checks nothing: eager's output all zeros, or eager itself
    # as far from fp64 as zeros would be (the model's values out of the
    # dtype's range); recorded and listed in the summary, the verdict kept
    zero = all(float(x.double().norm().item()) == 0.0 for x in kb.leaves(torch, want) if x.is_floating_point())
    ev = w.res.get("eager_vs_fp64")
    if zero:
        w.res["degenerate"] = "eager's output is all zeros: the comparison checks nothing"
    elif _finite(ev) and ev >= 0.5:
        w.res["degenerate"] = (f"eager itself is {ev:.2f} from fp64 (relative error norm): the model's values "
                               f"leave {dtype}'s range; the comparison checks little")

    kmod = None
    if so is not None:
        w.stage("load")
        try:
            kmod = kfuse.load(so)
        except Exception as e:  # noqa: BLE001
            if not j.get("time_failed"):
                return w.fail("load-fail", e)
            w.res.update(status="load-fail", error=kb.error_lines(kb.scrub(w, f"{type(e).__name__}: {e}")))
    if kmod is not None:
        w.stage("run")
        try:
            pristine = _clone(torch, sets[0])
            with torch.no_grad():
                got = kmod(*sets[0])
            torch.cuda.synchronize()
            changed = not all(torch.equal(a, b) for a, b in zip(sets[0], pristine))
            del pristine
        except Exception as e:  # noqa: BLE001
            if not j.get("time_failed"):
                return w.fail("run-fail", e)
            w.res.update(status="run-fail", error=kb.error_lines(kb.scrub(w, f"{type(e).__name__}: {e}")))
            kmod = None
    if kmod is not None:
        w.stage("compare")
        got = got if isinstance(got, tuple) else (got,)
        w.res["kfuse_nonfinite"] = nonfinite(torch, got)
        w.res["kfuse_vs_eager"] = rel_err(torch, got, want)
        w.res["kfuse_vs_fp64"] = rel_err(torch, got, ref) if ref is not None else None
        if w.res["kfuse_vs_eager"] is None:
            why = (f"outputs {[list(x.shape) for x in kb.leaves(torch, got)]}, eager {w.res['outputs']}")
            ok, tol, rule = False, None, "structure"
        else:
            # eager non-finite where fp64 is not: the model overflows in this
            # dtype, fp64 cannot judge kfuse, eager's own answer is the one
            # to match (rule "eager"); listed as a check that checks little
            overflow = ref is not None and (w.res.get("eager_nonfinite") or 0) > (w.res.get("fp64_nonfinite") or 0)
            if overflow:
                w.res["degenerate"] = (f"eager's output is non-finite in {w.res['eager_nonfinite']} elements where "
                                       f"fp64's is finite (the model overflows in {dtype}): kfuse is compared with "
                                       f"eager on the elements eager has finite; kfuse has "
                                       f"{w.res['kfuse_nonfinite']} non-finite")
            use_fp64 = ref is not None and not overflow
            ok, tol, rule = verdict(dtype, w.res.get("eager_vs_fp64") if use_fp64 else None,
                                    w.res["kfuse_vs_fp64"] if use_fp64 else None, w.res["kfuse_vs_eager"])
            why = (f"kfuse's relative error norm {_f(w.res['kfuse_vs_' + rule], '{:.2e}')} against {rule} "
                   f"is over {_f(tol, '{:.1e}')}")
        if w.res.get("eager_nonfinite"):
            why += f" (eager itself has {w.res['eager_nonfinite']} non-finite output elements)"
        if changed:
            ok, why = False, "kfuse changed its inputs"
        w.res.update(correct=ok, tol=tol, tol_rule=rule)
        if not ok:
            w.res.update(status="mismatch", error=f"mismatch: {why}")
            if not j.get("time_failed"):
                w.save(final=True)
                return
            kmod = None
        del got
    ref = want = None
    gc.collect()
    torch.cuda.empty_cache()

    # time: eager, torch.compile, kfuse
    w.stage("time")
    clock = kb.Clock(torch, j["budget"], j["min_runs"], j["max_runs"])
    if not j.get("l2_flush"):
        clock.flush = torch.empty(0, device="cuda")
    watch = kb.GpuWatch(torch)
    watch.sample()
    with torch.no_grad():
        try:
            w.res["eager"] = clock.time(model, sets)
        except Exception as e:  # noqa: BLE001
            w.res["eager"] = {"error": f"{type(e).__name__}: {kb.first_line(str(e))}"}
        watch.sample()
        w.save()
        for mode in j["modes"]:
            key = kb.mode_key(mode)
            w.stage(f"time-{key}")
            try:
                torch._dynamo.reset()
                kb.fresh_autotune(torch, j)
                cm = torch.compile(model) if mode == "default" else torch.compile(model, mode=mode)
                t0 = time.perf_counter()
                cm(*sets[0])
                torch.cuda.synchronize()
                first = time.perf_counter() - t0
                w.res[key] = clock.time(cm, sets)
                w.res[key]["first_call_s"] = round(first, 3)
            except Exception as e:  # noqa: BLE001
                w.res[key] = {"error": f"{type(e).__name__}: {kb.first_line(str(e))}"}
            cm = None
            watch.sample()
            w.save()
            torch.cuda.empty_cache()
        if kmod is not None:
            w.stage("time-kfuse")
            try:
                w.res["kfuse"] = clock.time(kmod, sets)
            except Exception as e:  # noqa: BLE001
                return w.fail("run-fail", e)
            watch.sample()
    w.res["gpu_processes"] = watch.result()

    def med(k):
        v = w.res.get(k)
        return v.get("median") if isinstance(v, dict) else None
    w.res["eager_ms"] = med("eager")
    w.res["compile_ms"] = med("compile")
    for mode in j["modes"]:
        if mode != "default":
            w.res[f"{kb.mode_key(mode)}_ms"] = med(kb.mode_key(mode))
    k = med("kfuse")
    w.res["kfuse_ms"] = k
    if k:
        e, c = w.res["eager_ms"], w.res["compile_ms"]
        w.res["speedup_eager"] = e / k if e else None
        w.res["speedup_compile"] = c / k if c else None
    if so is None:
        w.res["stage"] = failed_at
    w.res.setdefault("status", "ok")
    if w.res["status"] == "ok":
        w.stage("done")
    w.save(final=True)


WARM_KEYS = ("build_s", "build_notes", "params", "param_bytes", "exported", "export_s", "export_inputs",
             "export_error_fake", "pt2_bytes", "status", "error")


def worker_warm(w):
    """with warm_export, kfuse.export into the unit's folder for the timing
    phase (kfuse.warm.json); then torch.compile each mode once on the GPU
    (fills Inductor's caches)"""
    j = w.job
    errors = []
    try:
        w.stage("import")
        torch = kb._setup_torch(j)
        if j.get("warm_export"):
            pt2 = export_stage(w, torch)
            meta = {k: w.res[k] for k in WARM_KEYS if k in w.res}
            meta.update(pt2=pt2, stage=w.res["stage"])
            with open(os.path.join(j["dir"], "kfuse.warm.json"), "w") as f:
                json.dump(meta, f)
            w.res.pop("status", None)  # the timing phase records the unit's failure
            w.res.pop("error", None)
            import gc
            gc.collect()
        if not j["modes"]:
            w.save(final=True)
            return
        model = build_module(torch, j["spec"], j["small"], j["unit"]["dtype"], j["seed"])[0].cuda()
        args = input_tensors(torch, j["spec"], j["small"], j["unit"]["dtype"], j["seed"] + 2, "cuda")
        w.stage("compile-warm")
        with torch.no_grad():
            for mode in j["modes"]:
                try:
                    torch._dynamo.reset()
                    cm = torch.compile(model) if mode == "default" else torch.compile(model, mode=mode)
                    cm(*args)
                    torch.cuda.synchronize()
                except Exception as e:  # noqa: BLE001
                    errors.append(f"{mode}: {type(e).__name__}: {kb.first_line(str(e))}")
    except Exception as e:  # noqa: BLE001
        errors.append(f"{type(e).__name__}: {kb.first_line(str(e))}")
    if errors:
        w.res["error"] = kb.scrub(w, "\n".join(errors))
    w.save(final=True)


def worker_main(job_path):
    with open(job_path) as f:
        job = json.load(f)
    w = kb.Worker(job)
    try:
        {"probe": worker_probe, "cpu-check": worker_cpu_check, "model": worker_model,
         "warm": worker_warm}[job["kind"]](w)
    except BaseException as e:  # noqa: BLE001 - recorded with the stage reached
        if isinstance(e, KeyboardInterrupt):
            raise
        w.fail("crash", e)
    return 0


# ---- command line -------------------------------------------------------------------------

def main(argv=None):
    class Fmt(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
        pass
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], formatter_class=Fmt,
                                 epilog="The method and the outputs: the docstring at the top of this file and "
                                        "docs/PERFORMANCE.md (Model zoo runner).")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--kfuse", help="the kfuse binary")
    ap.add_argument("--out", help="results.jsonl, summary.md, summary.json, reports/, logs/ go here")
    ap.add_argument("--work", help="per-unit exports and modules (default: a temp dir, removed)")
    ap.add_argument("--keep-work", action="store_true", help="keep every unit's .pt2/.so in --work")
    ap.add_argument("--dtype", default="fp32,fp16,bf16", help="dtypes, comma-separated, of fp32,fp16,bf16")
    ap.add_argument("--tier", default="all", help="core: a few models a family; all: every model")
    ap.add_argument("--family", default="", help="families or groups, e.g. resnet,bert or decoder")
    ap.add_argument("--only", default="", help="models (names, patterns like 'resnet*', or MODEL/DTYPE)")
    ap.add_argument("--skip", default="", help="models to leave out (as --only)")
    ap.add_argument("--shard", default="", help="K/N: the K-th (from 1) of N round-robin parts of the units")
    ap.add_argument("--shard-costs", metavar="OLD.jsonl", help="--shard balanced by OLD's seconds a unit")
    ap.add_argument("--priority", default="", help="models (names or patterns) to run first, in this order")
    ap.add_argument("--done", default="",
                    help="earlier results.jsonl files (comma-separated) whose units count as done: left out "
                         "before --shard splits the rest (resuming on another machine or shard count)")
    ap.add_argument("--list", action="store_true", help="print the selected units and stop")
    ap.add_argument("--small", action="store_true", help="small batch, sequence and layer counts (CPU checks)")
    ap.add_argument("--redo", action="store_true", help="run units already in results.jsonl again")
    ap.add_argument("--redo-status", default="", help="run again those recorded with these statuses")
    ap.add_argument("--no-fork-server", action="store_true", help="every worker a fresh Python")
    ap.add_argument("--summarize", action="store_true", help="rebuild summary.md/json from results.jsonl and stop")
    ap.add_argument("--cpu-check", action="store_true", help="export and kfuse compile only: no GPU, no timing")
    ap.add_argument("--jobs", type=int, default=1, help="--cpu-check: units at a time")
    ap.add_argument("--compile-args", default="", help="extra `kfuse compile` flags, e.g. --no-judge")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds a unit's process may take (default 1200; --cpu-check 900)")
    ap.add_argument("--compile-timeout", type=float, default=600, help="seconds `kfuse compile` may take")
    ap.add_argument("--deadline", type=float, default=None,
                    help="seconds after which nothing new starts and a running unit is cut (not recorded)")
    ap.add_argument("--seed", type=int, default=42, help="weights seed; export inputs seed+1, checks seed+2, +3")
    ap.add_argument("--budget", type=float, default=1.0, help="seconds of timed runs per variant (wall)")
    ap.add_argument("--min-runs", type=int, default=5)
    ap.add_argument("--max-runs", type=int, default=50)
    ap.add_argument("--modes", default="default", help="torch.compile modes to time, comma-separated")
    ap.add_argument("--no-compile", action="store_true", help="do not time torch.compile")
    ap.add_argument("--no-fp64", action="store_true", help="no float64 reference (kfuse judged against eager)")
    ap.add_argument("--no-l2-flush", action="store_true", help="do not flush L2 between timed calls")
    ap.add_argument("--time-failed", action="store_true", help="time eager and torch.compile where kfuse failed")
    ap.add_argument("--warm-jobs", type=int, default=0,
                    help="N parallel workers run torch.compile once per unit before the timing (Inductor's caches)")
    ap.add_argument("--warm-chunk", type=int, default=None,
                    help="warm this many units, time them, then the next chunk (default: --warm-jobs; "
                         "0: warm all units first)")
    ap.add_argument("--warm-export", action="store_true",
                    help="the warm workers also kfuse.export each unit (CPU work; the timing phase compiles)")
    ap.add_argument("--warm-export-max-gb", type=float, default=20.0,
                    help="--warm-export keeps exports until they take this much disk; the rest export when timed")
    ap.add_argument("--inductor-cache", help="TORCHINDUCTOR_CACHE_DIR for every worker")
    args = ap.parse_args(argv)
    if args.worker:
        return worker_main(args.worker)
    if args.summarize:
        if not args.out:
            ap.error("--summarize needs --out")
        if not os.path.exists(os.path.join(args.out, "results.jsonl")):
            raise SystemExit(f"zoo: {args.out}/results.jsonl does not exist")
        summ = write_summary(args.out)
        print(f"wrote {args.out}/summary.md and summary.json ({len(summ['units'])} units)")
        return 0
    if args.warm_chunk is None:
        args.warm_chunk = args.warm_jobs
    if args.shard_costs and not args.shard:
        ap.error("--shard-costs balances --shard K/N: give --shard too")
    units = select(zoo_models(), args)
    if args.list:
        for u in units:
            spec = model_spec(u["model"])
            shapes = " ".join("x".join(map(str, i["shape"])) for i in spec["small" if args.small else "full"]["inputs"])
            print(f"{u['id']}\t{u['family']}\t{u['group']}\t{u['tier']}\t{shapes}")
        print(f"{len(units)} units")
        return 0
    if not args.out:
        ap.error("--out DIR is needed")
    if not units:
        raise SystemExit("zoo: the selection is empty")
    if args.timeout is None:
        args.timeout = 900.0 if args.cpu_check else 1200.0
    if args.cpu_check:
        return cpu_check(args, units)
    return gpu_run(args, units)


if __name__ == "__main__":
    sys.exit(main())
