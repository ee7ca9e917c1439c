"""One PyTorch training run measured for comet.bench_peers (the PyTorch
side of "COMET against PyTorch", docs/benchmarks.md).

    python -m comet.torch_peer --model resnet18 --image-size 224 --batch 64 \\
        --steps 5 --threads 2 --mode eager|checkpoint --json OUT.json
    python -m comet.torch_peer --model gpt --model-args \\
        layers=6,d_model=384,heads=6,seq_len=512 --batch 8 ... --json OUT.json
    python -m comet.torch_peer --known MiB,MiB,... --json OUT.json

Runs in the export environment (.venv-export: Debian's torch and
torchvision), in its own process, started with MALLOC_MMAP_THRESHOLD_ set
(comet.peak_rss; the run refuses to measure without it). The model is
comet.torch_models.build(name, seed 0, **model args), the module
comet.export turns into the ONNX Runtime artifact folder that comet-train
trains; the optimizer is torch.optim.AdamW with the hyper-parameters of
that folder's optimizer_model.onnx (passed in by comet.bench_peers); the
data are what comet-train's `--data synthetic` gives the model: uniform
[0, 1) images and uniform labels, or for the gpt int64 token sequences
(ids in [0, vocab) walking by 1 to 3 per position) with the next id as
each token's label.

A step is `zero_grad(set_to_none=True)`, forward, cross-entropy (mean; for
the gpt over the batch x seq_len tokens, as ONNX Runtime's loss on the
`[batch * seq_len, vocab]` logits), backward, `optimizer.step()`. After `--warmup` unmeasured steps each of
`--steps` steps is measured:

- peak (RSS): the bytes of the tensors live at the step's start (weights,
  BatchNorm buffers, AdamW's two moments, the batch; counted exactly from
  the tensors) plus the high-water mark of the process's RSS during the step
  above its RSS at the step's start (comet.peak_rss.Region). The report's
  figure is the largest over the measured steps.
- wall and CPU time (time.perf_counter, time.process_time: the process's
  CPU time, all threads), as comet-train's step_time_ms / step_cpu_ms.

One more step, not timed, runs under torch.profiler with profile_memory:
its allocation and free events (every tensor and kernel scratchpad goes
through c10's CPU allocator, oneDNN's included) give the allocator timeline
of the step and its peak (the "allocator" figure, the counterpart of
comet-train's peak_bytes), with the times of the forward, backward and
optimizer (record_function ranges) and the operator running at the peak;
and, in eager mode, torch.autograd.graph.
saved_tensors_hooks counts the bytes autograd saves for the backward:
distinct storages, parameters and the input batch excluded. With
non-reentrant checkpointing the hooks of the checkpoint itself take over
inside each stage, so nothing is counted there (saved_bytes is null).

--known runs the validation instead: a region that allocates float32
tensors of the given MiB in order, where a negative size frees the
tensor made that many allocations back (e.g. 64,96,-2,32 frees the 64),
preceded by a transient of twice the region's peak (a high-water mark
not reset at the region's start would show it) and a block of the largest
size made and freed twice (a heap that kept it would hide the region's
allocations); it reports what the RSS method and the profiler measure,
and the exact answer.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F
import torch.utils.checkpoint

from comet import peak_rss

MIB = 1 << 20
PHASE = "comet_peer:"


def stages(name, model):
    """The forward of `model` as (prefix, [stage modules], suffix) for
    per-stage checkpointing: ResNet's layer1..layer4, MobileNetV2's feature
    blocks after the stem (features[1:]), the CNN's two conv blocks, the
    Transformer's encoder layers, the GPT's decoder blocks. The stem (or
    embedding) and the head run outside the checkpointed stages."""
    if name == "resnet18":
        m = model
        pre = torch.nn.Sequential(m.conv1, m.bn1, m.relu, m.maxpool)
        post = torch.nn.Sequential(m.avgpool, torch.nn.Flatten(1), m.fc)
        return pre, [m.layer1, m.layer2, m.layer3, m.layer4], post
    if name == "mobilenet_v2":
        m = model
        feats = list(m.features)
        post = torch.nn.Sequential(torch.nn.AdaptiveAvgPool2d((1, 1)),
                                   torch.nn.Flatten(1), m.classifier)
        return feats[0], feats[1:], post
    if name == "cnn":
        f = list(model.features)
        return (torch.nn.Identity(), [torch.nn.Sequential(*f[:4]),
                                      torch.nn.Sequential(*f[4:])],
                model.classifier)
    if name == "transformer":
        m = model

        class Pre(torch.nn.Module):
            def forward(self, x):
                return m.embed(x.squeeze(1)) + m.pos

        class Post(torch.nn.Module):
            def forward(self, x):
                return m.head(m.norm(x.mean(dim=1)))

        return Pre(), list(m.layers), Post()
    if name == "gpt":
        m = model

        class Pre(torch.nn.Module):
            def forward(self, idx):
                pos = torch.arange(0, idx.shape[1], dtype=torch.long,
                                   device=idx.device)
                return m.tok(idx) + m.pos(pos.unsqueeze(0))

        class Post(torch.nn.Module):
            def forward(self, x):
                return m.head(m.ln(x)).view(-1, m.vocab)

        return Pre(), list(m.blocks), Post()
    raise ValueError(f"no checkpoint stages for {name!r}")


class Checkpointed(torch.nn.Module):
    """The model's own modules, with torch.utils.checkpoint around each
    stage (non-reentrant: it works whatever the stage's input, and it is
    the form PyTorch recommends)."""

    def __init__(self, name, model):
        super().__init__()
        self.model = model  # the parameters, in the same order
        self.pre, self.stages, self.post = stages(name, model)

    def forward(self, x):
        x = self.pre(x)
        for s in self.stages:
            x = torch.utils.checkpoint.checkpoint(s, x, use_reentrant=False)
        return self.post(x)


def storage_key(t):
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return s.data_ptr(), s.nbytes()


class SavedBytes:
    """Bytes of the distinct storages autograd saves for the backward,
    leaving out `exclude` (tensors: the parameters and the batch)."""

    def __init__(self, exclude):
        self.skip = {storage_key(t)[0] for t in exclude}
        self.seen = {}

    def pack(self, t):
        ptr, n = storage_key(t)
        if ptr not in self.skip and ptr:
            self.seen[ptr] = max(self.seen.get(ptr, 0), n)
        return t

    @property
    def bytes(self):
        return sum(self.seen.values())


def tensor_bytes(tensors):
    seen = {}
    for t in tensors:
        ptr, n = storage_key(t)
        seen[ptr] = n
    return sum(seen.values())


def live_state(model, opt, batch):
    """Bytes of the tensors that live across steps, by kind."""
    params = list(model.parameters())
    grads = [p.grad for p in params if p.grad is not None]
    state = [v for s in opt.state.values() for v in s.values()
             if torch.is_tensor(v) and v.numel() > 1]
    return {"params": tensor_bytes(params),
            "buffers": tensor_bytes(list(model.buffers())),
            "grads": tensor_bytes(grads),
            "optimizer_state": tensor_bytes(state),
            "batch": tensor_bytes(batch)}


def memory_events(prof):
    """(time in us, signed bytes) of the profiler's allocation and free
    events on the CPU, in order."""
    evs = []
    for i, e in enumerate(prof.profiler.kineto_results.events()):
        if e.name() == "[memory]" and str(e.device_type()).endswith("CPU"):
            evs.append((e.start_us(), i, e.nbytes()))
    evs.sort()
    return [(t, n) for t, _, n in evs]


def allocator_trace(events):
    """Cumulative bytes after each event, and its peak (>= 0)."""
    cur, peak, trace = 0, 0, []
    for _, n in events:
        cur += n
        peak = max(peak, cur)
        trace.append(cur)
    return trace, peak


def op_at(prof, t_us):
    """The innermost operator running at time t_us (the shortest of the
    profiler's events around it), or None."""
    best = None
    for e in prof.profiler.kineto_results.events():
        if e.name() == "[memory]":
            continue
        t0, d = e.start_us(), e.duration_us()
        if t0 <= t_us <= t0 + d and (best is None or d < best[0]):
            best = (d, e.name())
    return best[1] if best else None


def downsample_pairs(ts, xs, n=3000):
    """At most about n (t, x) points, keeping each bucket's largest x and
    its time."""
    if len(xs) <= n:
        return list(ts), list(xs)
    k = -(-len(xs) // n)
    out_t, out_x = [], []
    for i in range(0, len(xs), k):
        j = max(range(i, min(i + k, len(xs))), key=xs.__getitem__)
        out_t.append(ts[j])
        out_x.append(xs[j])
    return out_t, out_x


def phases(prof):
    """{phase: (start us, end us)} of the record_function ranges of the
    profiled step."""
    out = {}
    for e in prof.profiler.kineto_results.events():
        if e.name().startswith(PHASE):
            out[e.name()[len(PHASE):]] = (e.start_us(),
                                          e.start_us() + e.duration_us())
    return out


def peak_of(sizes):
    """The most MiB live at once when the sizes are made and freed in
    order (see --known)."""
    peak, cur, made = 0, 0, []
    for s in sizes:
        if s > 0:
            made.append(s)
            cur += s
            peak = max(peak, cur)
        else:
            cur -= made[len(made) + s]
            made[len(made) + s] = 0
    return peak


def run_known(sizes_mib):
    """The validation region: allocate/free as `sizes_mib` says."""
    sizes = [int(s) for s in sizes_mib]
    biggest = max(abs(s) for s in sizes)
    # A transient of twice the region's peak: the high-water mark before
    # the region is above anything the region reaches.
    exact = peak_of(sizes)
    big = torch.ones(2 * exact * MIB // 4)
    del big
    # Twice: glibc's dynamic threshold rises to a freed mmapped block's
    # size, so without MALLOC_MMAP_THRESHOLD_ the second one comes from
    # the heap and stays resident there when freed.
    for _ in range(2):
        warm = torch.ones(biggest * MIB // 4)
        del warm
    gc.collect()

    def region():
        ts = []
        for s in sizes:
            if s > 0:
                ts.append(torch.ones(s * MIB // 4))
            else:
                ts[len(ts) + s] = None
        del ts

    from torch.profiler import ProfilerActivity, profile
    with peak_rss.Region() as r:
        region()
    gc.collect()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        region()
    _, alloc_peak = allocator_trace(memory_events(prof))
    return {"known": sizes, "expected_bytes": exact * MIB,
            "rss_peak_bytes": r.peak_above_start,
            "allocator_peak_bytes": alloc_peak,
            "rss_start": r.rss_start, "rss_end": r.rss_end,
            "mmap_threshold_set": peak_rss.mmap_threshold_set()}


def token_batch(batch, seq_len, vocab, generator):
    """comet-train's synthetic token data (comet_rt_dataset_get_tokens):
    per sequence a start id, then steps of 1 to 3 modulo vocab; each
    token's label is the next id. Ids [batch, seq_len], labels
    [batch * seq_len], int64."""
    start = torch.randint(0, vocab, (batch, 1), generator=generator)
    walk = start + torch.cumsum(
        torch.randint(1, 4, (batch, seq_len), generator=generator), dim=1)
    ids = torch.cat([start, walk[:, :-1]], dim=1) % vocab
    return ids, (walk % vocab).reshape(-1)


def run_model(a):
    from comet import torch_models
    from comet.export import parse_model_args

    torch.manual_seed(0)
    model = torch_models.build(a.model, seed=0,
                               **parse_model_args(a.model_args or ""))
    model.train()
    net = Checkpointed(a.model, model) if a.mode == "checkpoint" else model
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr,
                            betas=(a.beta1, a.beta2), eps=a.eps,
                            weight_decay=a.weight_decay)
    g = torch.Generator().manual_seed(a.seed)
    if hasattr(model, "example_input"):  # token ids (the gpt)
        x, y = token_batch(a.batch, model.seq_len, model.vocab, g)
        size = model.seq_len
    else:
        x = torch.rand(a.batch, 1, a.image_size, a.image_size, generator=g)
        y = torch.randint(0, 10, (a.batch,), generator=g)
        size = a.image_size
    params = list(model.parameters())

    def step(hooks=None, phases=False):
        def phase(name):
            return torch.profiler.record_function(PHASE + name) if phases \
                else contextlib.nullcontext()

        opt.zero_grad(set_to_none=True)
        with phase("forward"):
            if hooks is None:
                loss = F.cross_entropy(net(x), y)
            else:
                with torch.autograd.graph.saved_tensors_hooks(hooks.pack,
                                                              lambda t: t):
                    loss = F.cross_entropy(net(x), y)
        with phase("backward"):
            loss.backward()
        with phase("optimizer"):
            opt.step()
        return float(loss)

    losses = []
    for _ in range(a.warmup):
        losses.append(step())
    steps = []
    for _ in range(a.steps):
        opt.zero_grad(set_to_none=True)
        gc.collect()
        live = live_state(model, opt, [x, y])
        t0, c0 = time.perf_counter(), time.process_time()
        with peak_rss.Region() as r:
            losses.append(step())
        t1, c1 = time.perf_counter(), time.process_time()
        persistent = sum(live.values())
        steps.append({"wall_ms": 1000 * (t1 - t0), "cpu_ms": 1000 * (c1 - c0),
                      "persistent_bytes": persistent,
                      "rss_start": r.rss_start, "rss_hwm": r.hwm,
                      "rss_above_start": r.peak_above_start,
                      "peak_bytes": persistent + r.peak_above_start})
    # The profiled step: allocator timeline and, in eager mode, the saved
    # tensors.
    from torch.profiler import ProfilerActivity, profile
    opt.zero_grad(set_to_none=True)
    gc.collect()
    live = live_state(model, opt, [x, y])
    hooks = SavedBytes(params + [x]) if a.mode == "eager" else None
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        losses.append(step(hooks, phases=True))
    events = memory_events(prof)
    trace, above = allocator_trace(events)
    base = sum(live.values())
    # Times from the start of the forward, in ms.
    ph = phases(prof)
    t0 = ph["forward"][0] if "forward" in ph else (events[0][0] if events else 0)
    times = [(t - t0) / 1000 for t, _ in events]
    peak_i = trace.index(above) if trace and above > 0 else None
    tl_t, tl_b = downsample_pairs([0.0] + times, [0] + trace)
    return {
        "model": a.model, "mode": a.mode, "image_size": size,
        "model_args": a.model_args, "batch": a.batch, "threads": torch.get_num_threads(),
        "torch": torch.__version__, "warmup": a.warmup,
        "optimizer": {"kind": "torch.optim.AdamW", "lr": a.lr,
                      "betas": [a.beta1, a.beta2], "eps": a.eps,
                      "weight_decay": a.weight_decay},
        "mmap_threshold_set": peak_rss.mmap_threshold_set(),
        "live_at_step_start": live,
        "steps": steps,
        "peak_bytes_rss": max(s["peak_bytes"] for s in steps),
        "peak_bytes_rss_median": statistics.median(
            s["peak_bytes"] for s in steps),
        "peak_bytes_allocator": base + above,
        "allocator_timeline": [base + b for b in tl_b],
        "allocator_timeline_ms": tl_t,
        "allocator_events": len(trace),
        "phases_ms": {k: [(b - t0) / 1000, (e - t0) / 1000]
                      for k, (b, e) in ph.items()},
        "peak_op": op_at(prof, events[peak_i][0]) if peak_i is not None
        else None,
        "peak_ms": times[peak_i] if peak_i is not None else None,
        "peak_phase": next((k for k, (b, e) in ph.items()
                            if peak_i is not None
                            and b <= events[peak_i][0] <= e), None),
        "saved_bytes": hooks.bytes if hooks else None,
        "step_time_ms_median": statistics.median(s["wall_ms"] for s in steps),
        "step_cpu_ms_median": statistics.median(s["cpu_ms"] for s in steps),
        "losses": losses,
    }


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m comet.torch_peer",
                                description=__doc__.splitlines()[0])
    p.add_argument("--model")
    p.add_argument("--mode", choices=["eager", "checkpoint"], default="eager")
    p.add_argument("--image-size", type=int, default=28)
    p.add_argument("--model-args", metavar="K=V,...",
                   help="the model's constructor arguments (as comet.export's "
                   "--model-args), e.g. the gpt's layers, d_model, heads, "
                   "seq_len")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.999)
    p.add_argument("--eps", type=float, default=1e-6)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--known", help="validation: comma list of MiB")
    p.add_argument("--json", required=True)
    a = p.parse_args(argv)
    if not peak_rss.mmap_threshold_set():
        p.error(f"run with MALLOC_MMAP_THRESHOLD_={peak_rss.MMAP_THRESHOLD} in "
                "the environment (comet.peak_rss): without it freed blocks "
                "stay in the heap and the RSS peak is wrong")
    torch.set_num_threads(a.threads)
    if a.known:
        res = run_known(a.known.split(","))
    else:
        if not a.model:
            p.error("--model is required")
        res = run_model(a)
    with open(a.json, "w") as f:
        json.dump(res, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
