# Runs `vllm bench serve --omni …` unchanged, and keeps what its result file does not:
# each measured request's own TTFP and send time, and the open-loop schedule.
#
# Used by benches/vllm_peer.rs as `<vllm's python> vllm_capture.py bench serve --omni …`
# with DFX_PEER_OUT=<file>. Two things are wrapped, nothing on the timed path is changed:
#
# - the `openai-audio-speech` request function: after vLLM's own function returned, its
#   output object's `start_time` (time.perf_counter() = CLOCK_MONOTONIC on Linux, taken
#   right before `session.post`), `audio_ttfp` and `latency` are stored under the request's
#   id (`x-request-id`, `<--request-id-prefix><index>`). These are the values vLLM's own
#   statistics are computed from; `--save-detailed` only keeps `start_times` and a `ttfts`
#   list that is 0 for every TTS request.
# - the `openai-realtime-tts` request function, the same way (its `audio_ttfp` is the
#   mean TTFP of the request's turns, vLLM's own clock: first append sent to first audio
#   delta received); and `_RealtimeTTSProbe.configure` (before the turn's clock starts),
#   which notes the session id the server gave in `session.created`, so each request's
#   sessions can be matched to the server's own timings.
# - `get_request` (the open-loop scheduler) is replaced by a copy of vLLM 0.30's
#   constant-rate branch (same numpy draws from the same global generator, same rescaling
#   to n / rate, same time.time() sleeps) that also notes each request's planned send on
#   the perf_counter clock. Ramp-up and self-timed runs go to the original.
#
# It also notes the process's CPU time (getrusage, user + system, all threads) when the
# measured phase starts (the scheduler's first call, after the start-up imports, the
# dataset and the warmups) and at exit (after vLLM computed and wrote its result): the
# measured phase's CPU, free of the ~45 s of start-up whose run-to-run noise (seconds)
# would swamp the difference of two request counts.
#
# At exit the file holds {"requests": [[id, start, ttfp, latency, ok], …],
# "sessions": {id: [server session id, …]} (realtime), "planned": {id: t},
# "cpu_phase_s": s, "vm_hwm_kib": peak RSS}, written after the benchmark finished.
#
# For `openai-chat-omni` (the parity evidence of BENCHMARKS.md's chat rows) it keeps, per
# request, "chat": [[id, start, ttft, audio_ttfp, latency, ok, server_ttft_ms, itl], …]
# (server_ttft_ms: the simulator's own stage-0 `vllm_ttft_ms`, from its arrival to its
# first text write) and "loop_lag_ms": how late a 5 ms `asyncio.sleep` woke during the
# measured phase, sampled by a task started with it (the event loop's busy time, which
# every stamp the request function takes waits behind).

import atexit
import json
import math
import os
import resource
import sys
import time

import asyncio
import contextvars
import numpy as np

from vllm_omni.benchmarks.patch import patch as P

_rows = []
_planned = {}
_cpu = {}


def _cpu_now():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime
_orig_func = P.ASYNC_REQUEST_FUNCS["openai-audio-speech"]
_orig_chat = P.ASYNC_REQUEST_FUNCS.get("openai-chat-omni")
_chat_rows = []
_loop_lag = []


async def _chat(request_func_input, session, pbar=None, **kw):
    out = await _orig_chat(request_func_input=request_func_input, session=session, pbar=pbar, **kw)
    rid = request_func_input.request_id
    if rid is not None:
        s0 = (out.stage_metrics or {}).get("0") or {}
        _chat_rows.append(
            [rid, out.start_time, out.ttft, out.audio_ttfp, out.latency, bool(out.success), s0.get("vllm_ttft_ms"), list(out.itl)]
        )
    return out


async def _probe_loop():
    while True:
        t = time.perf_counter()
        await asyncio.sleep(0.005)
        _loop_lag.append((time.perf_counter() - t - 0.005) * 1e3)
_orig_get_request = P.get_request
_orig_realtime = P.ASYNC_REQUEST_FUNCS.get("openai-realtime-tts")
_orig_configure = P._RealtimeTTSProbe.configure
_sessions = {}
# The server session ids of the request running in this task (each request is its own task).
_request_sessions = contextvars.ContextVar("dfx_request_sessions", default=None)


async def _configure(self, *args, **kwargs):
    await _orig_configure(self, *args, **kwargs)
    ids = _request_sessions.get()
    if ids is not None:
        ids.append(self._client.session_id)


async def _realtime(request_func_input, session, pbar=None):
    ids = []
    token = _request_sessions.set(ids)
    try:
        out = await _orig_realtime(request_func_input=request_func_input, session=session, pbar=pbar)
    finally:
        _request_sessions.reset(token)
    rid = request_func_input.request_id
    if rid is not None:
        _rows.append([rid, out.start_time, out.audio_ttfp, out.latency, bool(out.success)])
        _sessions[rid] = ids
    return out


async def _speech(request_func_input, session, pbar=None):
    out = await _orig_func(request_func_input=request_func_input, session=session, pbar=pbar)
    rid = request_func_input.request_id
    if rid is not None:
        _rows.append([rid, out.start_time, out.audio_ttfp, out.latency, bool(out.success)])
    return out


async def _get_request(
    input_requests,
    request_rate,
    burstiness=1.0,
    ramp_up_strategy=None,
    ramp_up_start_rps=None,
    ramp_up_end_rps=None,
    self_timed=False,
):
    if "start" not in _cpu:
        _cpu["start"] = _cpu_now()
        if os.environ.get("DFX_PEER_LOOP_PROBE"):
            _cpu["probe"] = asyncio.ensure_future(_probe_loop())
    if ramp_up_strategy is not None or self_timed:
        async for item in _orig_get_request(
            input_requests,
            request_rate,
            burstiness,
            ramp_up_strategy,
            ramp_up_start_rps,
            ramp_up_end_rps,
            self_timed,
        ):
            yield item
        return
    input_requests = list(input_requests)
    delay_ts = []
    for _ in input_requests:
        if request_rate == float("inf"):
            delay_ts.append(0)
        elif burstiness == float("inf"):
            delay_ts.append(1.0 / request_rate)
        else:
            theta = 1.0 / (request_rate * burstiness)
            delay_ts.append(np.random.gamma(shape=burstiness, scale=theta))
    for i in range(1, len(delay_ts)):
        delay_ts[i] += delay_ts[i - 1]
    if delay_ts and delay_ts[-1] != 0:
        factor = (len(input_requests) / request_rate) / delay_ts[-1]
        delay_ts = [d * factor for d in delay_ts]
    start_ts = time.time()
    start_pc = time.perf_counter()
    for i, request in enumerate(input_requests):
        if request.request_id is not None and not math.isinf(request_rate):
            _planned[request.request_id] = start_pc + delay_ts[i]
        if delay_ts[i] > 0:
            sleep_s = start_ts + delay_ts[i] - time.time()
            if sleep_s > 0:
                await asyncio.sleep(sleep_s)
        yield request, request_rate


P.ASYNC_REQUEST_FUNCS["openai-audio-speech"] = _speech
if _orig_chat is not None:
    P.ASYNC_REQUEST_FUNCS["openai-chat-omni"] = _chat
P.get_request = _get_request
if _orig_realtime is not None:
    P.ASYNC_REQUEST_FUNCS["openai-realtime-tts"] = _realtime
    P._RealtimeTTSProbe.configure = _configure


def _dump():
    path = os.environ.get("DFX_PEER_OUT")
    if path:
        with open(path, "w") as f:
            phase = _cpu_now() - _cpu["start"] if "start" in _cpu else None
            json.dump(
                {
                    "requests": _rows,
                    "sessions": _sessions,
                    "chat": _chat_rows,
                    "loop_lag_ms": _loop_lag,
                    "planned": _planned,
                    "cpu_phase_s": phase,
                    "vm_hwm_kib": _vm_hwm_kib(),
                },
                f,
            )


def _vm_hwm_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


atexit.register(_dump)

from vllm.entrypoints.cli.main import main  # noqa: E402

sys.argv[0] = "vllm"
sys.exit(main())
